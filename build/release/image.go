package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/noderotation/node-rotation-controller/build/image/imagebuild"
)

// imageArches are the platforms of the controller's image.
var imageArches = []string{"amd64", "arm64"}

// layoutName is the image index's OCI layout directory in dist.
func layoutName(version string) string { return "node-rotation-controller_" + version + "_oci" }

// buildIndex builds one image per architecture from bin/linux_<arch>/
// with build/image's builder (the image `make image` builds) and writes
// their index as an OCI image layout, the form `crane push --index` and
// `oras` push.
func buildIndex(c config, created time.Time, m *manifest) error {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	m.Image.Platforms = map[string]string{}
	for _, arch := range imageArches {
		img, err := imagebuild.Image(imagebuild.Spec{
			Binary:     filepath.Join(c.dist, "bin", "linux_"+arch, "node-rotation-controller"),
			Repository: c.repository, Tag: c.version, Version: c.version, Arch: arch, Created: created,
		})
		if err != nil {
			return fmt.Errorf("linux/%s: %w", arch, err)
		}
		d, err := img.Digest()
		if err != nil {
			return err
		}
		m.Image.Platforms["linux/"+arch] = d.String()
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1,
			Platform:  &v1.Platform{OS: "linux", Architecture: arch},
		}})
	}
	dir := layoutName(c.version)
	if err := os.RemoveAll(filepath.Join(c.dist, dir)); err != nil {
		return err
	}
	if _, err := layout.Write(filepath.Join(c.dist, dir), idx); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	m.Image.Layout, m.Image.Index = dir, d.String()
	return nil
}
