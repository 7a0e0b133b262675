package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// manifestName is the release's table of contents in the dist directory.
const manifestName = "manifest.json"

// manifest lists every artifact of a release with its digest; the release
// workflow publishes what it lists and the dist test checks each claim.
type manifest struct {
	Version string    `json:"version"`
	Created time.Time `json:"created"`
	// Image is the controller's image index, pushed as a whole.
	Image     imageEntry `json:"image"`
	Artifacts []artifact `json:"artifacts"`
}

type imageEntry struct {
	Layout    string            `json:"layout"` // the OCI image layout directory, relative to dist
	Index     string            `json:"index"`  // the index's digest, what the chart pins
	Platforms map[string]string `json:"platforms"`
}

// artifact is one file of the release, relative to the dist directory.
type artifact struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"` // archive, checksums, chart, crds, sbom, krew
	SHA256 string `json:"sha256"`
	OS     string `json:"os,omitempty"`
	Arch   string `json:"arch,omitempty"`
}

// add records a file of dist with its digest.
func (m *manifest) add(dist, name, kind, goos, arch string) error {
	sum, err := fileSHA256(filepath.Join(dist, name))
	if err != nil {
		return err
	}
	m.Artifacts = append(m.Artifacts, artifact{Name: name, Kind: kind, SHA256: sum, OS: goos, Arch: arch})
	return nil
}

func (m *manifest) write(path string) error {
	sort.Slice(m.Artifacts, func(i, j int) bool { return m.Artifacts[i].Name < m.Artifacts[j].Name })
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func (m *manifest) print(w io.Writer) error {
	fmt.Fprintf(w, "release %s (created %s)\n", m.Version, m.Created.Format(time.RFC3339))
	fmt.Fprintf(w, "image index digest: %s (%s)\n", m.Image.Index, m.Image.Layout)
	for _, p := range sortedKeys(m.Image.Platforms) {
		fmt.Fprintf(w, "  %s: %s\n", p, m.Image.Platforms[p])
	}
	for _, a := range m.Artifacts {
		fmt.Fprintf(w, "%-9s sha256:%s  %s\n", a.Kind, a.SHA256, a.Name)
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
