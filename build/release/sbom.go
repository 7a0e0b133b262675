package main

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// sbomName is the CycloneDX SBOM of one binary.
func sbomName(binary, version string) string { return binary + "_" + version + ".cdx.json" }

// writeSBOMs writes a CycloneDX SBOM for the controller (the image holds
// it alone) and for rotationctl (the archives), from the module graph Go
// linked into each (debug/buildinfo): the standard library at the Go
// toolchain's version and every module with its version and go.sum hash. The linux/amd64 builds stand for their platforms: the
// module set is the same on every platform this project builds.
func writeSBOMs(c config, m *manifest) error {
	for _, bin := range []string{"node-rotation-controller", "rotationctl"} {
		info, err := buildinfo.ReadFile(filepath.Join(c.dist, "bin", "linux_amd64", bin))
		if err != nil {
			return fmt.Errorf("%s: reading its build information: %w", bin, err)
		}
		name := sbomName(bin, c.version)
		f, err := os.Create(filepath.Join(c.dist, name))
		if err != nil {
			return err
		}
		enc := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON)
		enc.SetPretty(true)
		err = enc.Encode(sbomOf(bin, c.version, info))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := m.add(c.dist, name, "sbom", "", ""); err != nil {
			return err
		}
	}
	return nil
}

func purl(path, version string) string { return "pkg:golang/" + path + "@" + version }

// sbomOf is the BOM of one binary: the application (this module at the
// release's version) and one library component per module it links. No
// timestamp or serial number: the same binary gives the same bytes.
func sbomOf(bin, version string, info *buildinfo.BuildInfo) *cdx.BOM {
	mainRef := purl(info.Main.Path, "v"+version)
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{Component: &cdx.Component{
		BOMRef: mainRef, Type: cdx.ComponentTypeApplication, Name: bin, Version: version, PackageURL: mainRef,
		Properties: &[]cdx.Property{{Name: "go:toolchain", Value: info.GoVersion}, {Name: "go:path", Value: info.Path}},
	}}
	// the standard library, as scanners match Go's own advisories by it
	std := purl("stdlib", info.GoVersion)
	components := []cdx.Component{{BOMRef: std, Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: info.GoVersion, PackageURL: std}}
	refs := []string{std}
	for _, d := range info.Deps {
		mod := d
		if d.Replace != nil {
			mod = d.Replace // what was linked: the replacement's path and version
		}
		ref := purl(mod.Path, mod.Version)
		comp := cdx.Component{BOMRef: ref, Type: cdx.ComponentTypeLibrary, Name: mod.Path, Version: mod.Version, PackageURL: ref}
		if h, ok := strings.CutPrefix(mod.Sum, "h1:"); ok {
			comp.Properties = &[]cdx.Property{{Name: "go:sum", Value: "h1:" + h}}
		}
		components = append(components, comp)
		refs = append(refs, ref)
	}
	bom.Components = &components
	bom.Dependencies = &[]cdx.Dependency{{Ref: mainRef, Dependencies: &refs}}
	return bom
}
