package main

import (
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// krewName is the krew plugin manifest: the plugin noderotation, one
// platform per archive, each with the archive's URL and SHA-256.
const krewName = "noderotation.yaml"

type krewPlugin struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Metadata   krewMeta `json:"metadata"`
	Spec       krewSpec `json:"spec"`
}

type krewMeta struct {
	Name string `json:"name"`
}

type krewSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Caveats          string         `json:"caveats"`
	Platforms        []krewPlatform `json:"platforms"`
}

type krewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string     `json:"uri"`
	SHA256 string     `json:"sha256"`
	Files  []krewFile `json:"files"`
	Bin    string     `json:"bin"`
}

type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// writeKrew writes the manifest from the archives the manifest recorded:
// krew installs rotationctl and links it as kubectl-noderotation.
func writeKrew(c config, m *manifest) error {
	p := krewPlugin{APIVersion: "krew.googlecontainertools.github.com/v1alpha2", Kind: "Plugin", Metadata: krewMeta{Name: "noderotation"}}
	p.Spec = krewSpec{
		Version:          "v" + c.version,
		Homepage:         "https://github.com/noderotation/node-rotation-controller",
		ShortDescription: "Show and explain Karpenter node rotations",
		Description: "The CLI of node-rotation-controller, which rotates Karpenter NodeClaims inside maintenance windows, make-before-break.\n" +
			"status shows each NodePool's window, start gate, rotation in flight and forecast; explain says why a NodeClaim\n" +
			"is or is not rotating; plan derives a RotationPolicy's schedule figures; version names the installed controller.\n",
		Caveats: "krew links the plugin only. For kubectl's completion of it (kubectl 1.26 and later), put its\n" +
			"kubectl_complete-noderotation script on your PATH, e.g.\n" +
			"  ln -s ~/.krew/store/noderotation/v" + c.version + "/kubectl_complete-noderotation ~/bin/\n",
	}
	for _, a := range m.Artifacts {
		if a.Kind != "archive" {
			continue
		}
		var pl krewPlatform
		pl.Selector.MatchLabels = map[string]string{"os": a.OS, "arch": a.Arch}
		pl.URI = fmt.Sprintf("%s/v%s/%s", c.baseURL, c.version, a.Name)
		pl.SHA256 = a.SHA256
		pl.Files = []krewFile{{"rotationctl", "."}, {"kubectl_complete-noderotation", "."}, {"LICENSE", "."}}
		pl.Bin = "rotationctl"
		p.Spec.Platforms = append(p.Spec.Platforms, pl)
	}
	b, err := yaml.Marshal(p)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.dist, krewName), b, 0o644); err != nil {
		return err
	}
	return m.add(c.dist, krewName, "krew", "", "")
}
