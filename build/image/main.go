// Command image builds the controller's container image from its static
// binary, without Docker or network, as an OCI archive that `podman load`
// and `docker load` accept (`make image` runs it; README.md here). The same
// binary gives the same archive, byte for byte: the creation time is
// SOURCE_DATE_EPOCH when set, else the Unix epoch.
//
//	go run . -binary ../../dist/image/node-rotation-controller -out ../../dist/image.tar \
//	    -repository ghcr.io/noderotation/node-rotation-controller -version 0.1.0
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/noderotation/node-rotation-controller/build/image/imagebuild"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	var s imagebuild.Spec
	var out, extract string
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	fs.StringVar(&s.Binary, "binary", "", "path of the static linux controller binary (required)")
	fs.StringVar(&out, "out", "", "path of the image archive to write (required)")
	fs.StringVar(&s.Repository, "repository", "", "image repository, e.g. ghcr.io/noderotation/node-rotation-controller (required)")
	fs.StringVar(&s.Tag, "tag", "", "image tag (default: -version)")
	fs.StringVar(&s.Version, "version", "", "org.opencontainers.image.version label (required)")
	fs.StringVar(&s.Source, "source", imagebuild.DefaultSource, "org.opencontainers.image.source label")
	fs.StringVar(&s.Arch, "arch", runtime.GOARCH, "image architecture, a GOARCH value; the binary must be built for it")
	fs.StringVar(&extract, "extract", "", "after writing, read the archive back and write the image's entrypoint binary to this path")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	if s.Tag == "" {
		s.Tag = s.Version
	}
	created, err := imagebuild.CreatedFromEnv()
	if err != nil {
		return err
	}
	s.Created = created

	res, err := imagebuild.Build(s, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "image: %s (linux/%s, created %s)\n", res.Reference, s.Arch, s.Created.Format("2006-01-02T15:04:05Z"))
	fmt.Fprintf(stdout, "image digest: %s\n", res.Digest)
	fmt.Fprintf(stdout, "image ID (config digest): %s\n", res.ConfigDigest)
	fmt.Fprintf(stdout, "archive: %s\n", out)

	if extract == "" {
		return nil
	}
	// Read the archive back as a loader would, check it against what was
	// built, and hand out the binary it ships.
	a, err := imagebuild.Open(out)
	if err != nil {
		return err
	}
	defer a.Close()
	if got, err := a.Image.Digest(); err != nil {
		return err
	} else if got != res.Digest {
		return fmt.Errorf("%s: read back digest %s, built %s", out, got, res.Digest)
	}
	if err := imagebuild.ExtractEntrypoint(a.Image, extract); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "entrypoint extracted from the archive: %s\n", extract)
	return nil
}
