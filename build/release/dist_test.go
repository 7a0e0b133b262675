package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"sigs.k8s.io/yaml"

	"github.com/noderotation/node-rotation-controller/build/image/imagebuild"
)

// distEnv names the dist directory `make release` wrote; the test reads it
// back and checks every claim of manifest.json and docs/releasing.md.
const distEnv = "NRC_RELEASE_DIST"

func readDist(t *testing.T) (string, *manifest) {
	t.Helper()
	dist := os.Getenv(distEnv)
	if dist == "" {
		t.Skipf("%s is not set: make release runs this test on what it wrote", distEnv)
	}
	raw, err := os.ReadFile(filepath.Join(dist, manifestName))
	if err != nil {
		t.Fatal(err)
	}
	m := &manifest{}
	if err := json.Unmarshal(raw, m); err != nil {
		t.Fatalf("%s: %v", manifestName, err)
	}
	return dist, m
}

// Every file of dist is in the manifest with its digest, and every
// artifact of the manifest is there with that digest.
func TestDistManifest(t *testing.T) {
	dist, m := readDist(t)
	listed := map[string]string{}
	for _, a := range m.Artifacts {
		listed[a.Name] = a.SHA256
		sum, err := fileSHA256(filepath.Join(dist, a.Name))
		if err != nil || sum != a.SHA256 {
			t.Errorf("%s: sha256 %s (%v), the manifest says %s", a.Name, sum, err, a.SHA256)
		}
	}
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if n == manifestName || n == "bin" || n == m.Image.Layout {
			continue
		}
		if _, ok := listed[n]; !ok {
			t.Errorf("%s is in dist but not in the manifest", n)
		}
	}
	kinds := map[string]int{}
	for _, a := range m.Artifacts {
		kinds[a.Kind]++
	}
	want := map[string]int{"archive": len(cliPlatforms), "checksums": 1, "chart": 1, "crds": 1, "sbom": 2, "krew": 1}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d artifacts of kind %s, want %d", kinds[k], k, n)
		}
	}
}

// The image index holds linux/amd64 and linux/arm64, each image's binary
// built for its architecture; index.json is the index the manifest names.
func TestDistImageIndex(t *testing.T) {
	dist, m := readDist(t)
	dir := filepath.Join(dist, m.Image.Layout)
	raw, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(sum[:]) != m.Image.Index {
		t.Errorf("index.json is sha256:%x, the manifest names %s", sum, m.Image.Index)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, d := range im.Manifests {
		p := d.Platform.OS + "/" + d.Platform.Architecture
		platforms = append(platforms, p)
		if m.Image.Platforms[p] != d.Digest.String() {
			t.Errorf("%s: %s in the index, %s in the manifest", p, d.Digest, m.Image.Platforms[p])
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		bin := filepath.Join(t.TempDir(), "node-rotation-controller")
		if err := imagebuild.ExtractEntrypoint(img, bin); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := imagebuild.CheckStatic(b, d.Platform.Architecture); err != nil {
			t.Errorf("%s: the image's binary: %v", p, err)
		}
		cf, err := img.ConfigFile()
		if err != nil || cf.Architecture != d.Platform.Architecture || cf.Config.Labels[imagebuild.LabelVersion] != m.Version {
			t.Errorf("%s: config %+v (%v): want its architecture and the version label %s", p, cf, err, m.Version)
		}
	}
	slices.Sort(platforms)
	if !slices.Equal(platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("the index holds %v, want linux/amd64 and linux/arm64", platforms)
	}
}

// Each archive holds rotationctl for its platform, the completion script
// and the LICENSE; checksums.txt and the krew manifest give its sha256.
func TestDistArchives(t *testing.T) {
	dist, m := readDist(t)
	sums := map[string]string{}
	f, err := os.Open(filepath.Join(dist, checksumsName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("%s: line %q is not sha256sum's", checksumsName, sc.Text())
		}
		sums[name] = sum
	}
	krew := readKrew(t, dist)
	for _, a := range m.Artifacts {
		if a.Kind != "archive" {
			continue
		}
		if sums[a.Name] != a.SHA256 {
			t.Errorf("%s: checksums.txt says %s, the file is %s", a.Name, sums[a.Name], a.SHA256)
		}
		files := untarGz(t, filepath.Join(dist, a.Name))
		for _, want := range []string{"rotationctl", "kubectl_complete-noderotation", "LICENSE"} {
			if _, ok := files[want]; !ok {
				t.Errorf("%s lacks %s", a.Name, want)
			}
		}
		checkExecutable(t, a, files["rotationctl"])
		found := false
		for _, p := range krew.Spec.Platforms {
			if p.Selector.MatchLabels["os"] == a.OS && p.Selector.MatchLabels["arch"] == a.Arch {
				found = true
				if p.SHA256 != a.SHA256 || !strings.HasSuffix(p.URI, "/v"+m.Version+"/"+a.Name) || p.Bin != "rotationctl" {
					t.Errorf("krew %s/%s: %+v, want sha256 %s, a URI ending in /v%s/%s and bin rotationctl", a.OS, a.Arch, p, a.SHA256, m.Version, a.Name)
				}
			}
		}
		if !found {
			t.Errorf("the krew manifest has no %s/%s platform", a.OS, a.Arch)
		}
	}
	if krew.Metadata.Name != "noderotation" || krew.Spec.Version != "v"+m.Version || len(krew.Spec.Platforms) != len(cliPlatforms) {
		t.Errorf("krew manifest %s %s with %d platforms", krew.Metadata.Name, krew.Spec.Version, len(krew.Spec.Platforms))
	}
}

func checkExecutable(t *testing.T, a artifact, b []byte) {
	t.Helper()
	switch a.OS {
	case "linux":
		f, err := elf.NewFile(bytes.NewReader(b))
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[a.Arch]
		if err != nil || f.Machine != want {
			t.Errorf("%s: rotationctl is not an ELF for %s (%v)", a.Name, want, err)
		}
	case "darwin":
		f, err := macho.NewFile(bytes.NewReader(b))
		want := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[a.Arch]
		if err != nil || f.Cpu != want {
			t.Errorf("%s: rotationctl is not a Mach-O for %s (%v)", a.Name, want, err)
		}
	default:
		t.Errorf("%s: unknown OS %s", a.Name, a.OS)
	}
}

func untarGz(t *testing.T, path string) map[string][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if out[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

func readKrew(t *testing.T, dist string) krewPlugin {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dist, krewName))
	if err != nil {
		t.Fatal(err)
	}
	var p krewPlugin
	if err := yaml.UnmarshalStrict(raw, &p); err != nil {
		t.Fatalf("%s: %v", krewName, err)
	}
	return p
}

// The packaged chart is the release's version and pins the index.
func TestDistChart(t *testing.T) {
	dist, m := readDist(t)
	for _, a := range m.Artifacts {
		if a.Kind != "chart" {
			continue
		}
		c, err := loader.Load(filepath.Join(dist, a.Name))
		if err != nil {
			t.Fatalf("%s: %v", a.Name, err)
		}
		image, _ := c.Values["image"].(map[string]any)
		if c.Metadata.Version != m.Version || c.Metadata.AppVersion != m.Version || image["digest"] != m.Image.Index {
			t.Errorf("%s: version %s, appVersion %s, image.digest %v; want %s, %s, %s", a.Name, c.Metadata.Version, c.Metadata.AppVersion, image["digest"], m.Version, m.Version, m.Image.Index)
		}
		if len(c.CRDObjects()) != 1 {
			t.Errorf("%s: %d CRDs, want the RotationPolicy's", a.Name, len(c.CRDObjects()))
		}
	}
}

// The SBOMs name the modules each binary links, at go.mod's versions:
// the controller's its controller-runtime, client-go and Karpenter (and
// not the CLI's cli-runtime); rotationctl's also cli-runtime.
func TestDistSBOMs(t *testing.T) {
	dist, m := readDist(t)
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	required := func(path string) string {
		r := regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(path) + ` (v\S+)`).FindSubmatch(gomod)
		if r == nil {
			t.Fatalf("go.mod requires no %s", path)
		}
		return string(r[1])
	}
	for bin, want := range map[string][]string{
		"node-rotation-controller": {"sigs.k8s.io/controller-runtime", "k8s.io/client-go", "sigs.k8s.io/karpenter", "github.com/google/cel-go"},
		"rotationctl":              {"sigs.k8s.io/controller-runtime", "k8s.io/client-go", "k8s.io/cli-runtime", "github.com/spf13/cobra"},
	} {
		f, err := os.Open(filepath.Join(dist, sbomName(bin, m.Version)))
		if err != nil {
			t.Fatal(err)
		}
		bom := cdx.NewBOM()
		err = cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(bom)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", bin, err)
		}
		if bom.Metadata == nil || bom.Metadata.Component == nil || bom.Metadata.Component.Name != bin || bom.Metadata.Component.Version != m.Version {
			t.Errorf("%s: the SBOM describes %+v", bin, bom.Metadata)
		}
		got := map[string]string{}
		for _, c := range *bom.Components {
			got[c.Name] = c.Version
		}
		for _, mod := range want {
			if got[mod] != required(mod) {
				t.Errorf("%s's SBOM: %s at %q, go.mod requires %s", bin, mod, got[mod], required(mod))
			}
		}
		if _, ok := got["k8s.io/cli-runtime"]; bin == "node-rotation-controller" && ok {
			t.Errorf("the controller's SBOM names k8s.io/cli-runtime, which it must not link")
		}
	}
}

// The CRDs file is the chart's CRDs.
func TestDistCRDs(t *testing.T) {
	dist, m := readDist(t)
	got, err := os.ReadFile(filepath.Join(dist, crdsName(m.Version)))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("../..", chartDir, "crds", "noderotation.io_rotationpolicies.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the chart's crds/", crdsName(m.Version))
	}
}

// What make release wrote is what the workflow publishes: every artifact
// of the manifest uploaded to the release, the layout pushed as the index.
func TestDistIsPublished(t *testing.T) {
	_, m := readDist(t)
	uploads := uploadGlobs(t, m.Version)
	for _, a := range m.Artifacts {
		if !matchesAny(uploads, "dist/release/"+a.Name) {
			t.Errorf("%s is not uploaded by the release workflow (it uploads %v)", a.Name, uploads)
		}
	}
	if !matchesAny(uploads, "dist/release/"+manifestName) {
		t.Errorf("%s is not uploaded by the release workflow", manifestName)
	}
	_, script := readWorkflow(t)
	if !slices.Contains(pushedLayouts(script, m.Version), "dist/release/"+m.Image.Layout) {
		t.Errorf("the workflow does not push %s", m.Image.Layout)
	}
}

// One SBOM per binary stands for every platform: each platform's build
// links the same modules at the same versions.
func TestDistSBOMsStandForEveryPlatform(t *testing.T) {
	dist, _ := readDist(t)
	for _, bin := range []string{"node-rotation-controller", "rotationctl"} {
		var first []string
		var firstAt string
		matches, _ := filepath.Glob(filepath.Join(dist, "bin", "*", bin))
		if len(matches) < 2 {
			t.Fatalf("%s built for %d platforms", bin, len(matches))
		}
		for _, p := range matches {
			info, err := buildinfo.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var deps []string
			for _, d := range info.Deps {
				deps = append(deps, d.Path+"@"+d.Version)
			}
			if first == nil {
				first, firstAt = deps, p
			} else if !slices.Equal(deps, first) {
				t.Errorf("%s links other modules than %s", p, firstAt)
			}
		}
	}
}
