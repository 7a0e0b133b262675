// Command release assembles a release of node-rotation-controller in one
// directory, offline (once the Go module cache holds its modules) and
// reproducibly (`make release`, docs/releasing.md): the controller image as an OCI image index for linux/amd64 and
// linux/arm64, rotationctl archives with SHA-256 checksums, the chart
// packaged with the image digest pinned, the CRDs as one file, CycloneDX
// SBOMs of both binaries, a krew plugin manifest and manifest.json, which
// names every artifact and its digest. The binaries are built by the
// Makefile into <dist>/bin/<os>_<arch>/ before it runs.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/noderotation/node-rotation-controller/build/image/imagebuild"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

// config is what one release is made from.
type config struct {
	version    string // VERSION, without the v
	dist       string // the output directory; its bin/ holds the binaries
	repoRoot   string // the checkout: the chart, LICENSE, the completion script
	repository string // the image's repository
	baseURL    string // where the release's files are downloaded from (krew)
}

func run(args []string, stdout io.Writer) error {
	var c config
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.StringVar(&c.version, "version", "", "the release, e.g. 0.1.0 (required)")
	fs.StringVar(&c.dist, "dist", "", "the output directory, with the binaries in bin/<os>_<arch>/ (required)")
	fs.StringVar(&c.repoRoot, "repo-root", "../..", "the repository's root")
	fs.StringVar(&c.repository, "repository", "", "the image repository, e.g. ghcr.io/noderotation/node-rotation-controller (required)")
	fs.StringVar(&c.baseURL, "base-url", "https://github.com/noderotation/node-rotation-controller/releases/download", "the release downloads' base URL; /v<version>/<file> is appended")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.version == "" || c.dist == "" || c.repository == "" {
		return fmt.Errorf("-version, -dist and -repository are required")
	}
	created, err := imagebuild.CreatedFromEnv()
	if err != nil {
		return err
	}
	m := &manifest{Version: c.version, Created: created}
	steps := []struct {
		what string
		do   func() error
	}{
		{"image index", func() error { return buildIndex(c, created, m) }},
		{"rotationctl archives", func() error { return archiveCLI(c, created, m) }},
		{"chart", func() error { return packageChart(c, created, m) }},
		{"CRDs", func() error { return writeCRDs(c, m) }},
		{"SBOMs", func() error { return writeSBOMs(c, m) }},
		{"krew manifest", func() error { return writeKrew(c, m) }},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	if err := m.write(filepath.Join(c.dist, manifestName)); err != nil {
		return err
	}
	return m.print(stdout)
}
