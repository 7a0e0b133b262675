// Package imagebuild builds the controller's container image without Docker
// or network: a FROM-scratch OCI image with one layer holding the static
// controller binary, written as a tar archive that is at the same time an
// OCI image layout (index.json, oci-layout, blobs/sha256/…) and a
// docker-save archive (manifest.json), so `podman load` and `docker load`
// both accept it. Everything that could vary between two builds (times,
// owners, entry order) is fixed: the same binary gives the same archive,
// byte for byte, and so the same digest.
package imagebuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What every image of the controller has; the Containerfile at the
// repository root says the same (containerfile_test.go compares them).
const (
	// Entrypoint is the path of the one file of the image.
	Entrypoint = "/node-rotation-controller"
	// User is the non-root user and group the container runs as (the
	// chart's runAsUser).
	User = "65532:65532"
	// WorkingDir is the container's working directory.
	WorkingDir = "/"
	// Title is the image's title label.
	Title = "node-rotation-controller"
	// DefaultSource is the source label unless Spec.Source says otherwise.
	DefaultSource = "https://github.com/noderotation/node-rotation-controller"
	// OS is the only operating system the image is built for.
	OS = "linux"

	LabelSource  = "org.opencontainers.image.source"
	LabelVersion = "org.opencontainers.image.version"
	LabelTitle   = "org.opencontainers.image.title"

	// BinaryMode is the mode of the binary in the layer: read and execute
	// for everyone, writable by no one.
	BinaryMode = 0o555

	// AnnotationRefName and AnnotationImageName name the image in
	// index.json: the first is read by podman (and the OCI tools), the
	// second by docker and containerd.
	AnnotationRefName   = "org.opencontainers.image.ref.name"
	AnnotationImageName = "io.containerd.image.name"
)

// Spec is what one image is built from.
type Spec struct {
	// Binary is the path of the static linux controller binary.
	Binary string
	// Repository and Tag name the image (repository:tag) in the archive.
	Repository string
	Tag        string
	// Version is the version label.
	Version string
	// Source is the source label; DefaultSource when empty.
	Source string
	// Arch is the image's architecture, a GOARCH value (amd64, arm64, …).
	Arch string
	// Created is the image's creation time, also the time of every file
	// and archive entry. CreatedFromEnv gives the usual choice.
	Created time.Time
}

// Reference is the image's name, repository:tag.
func (s Spec) Reference() string { return s.Repository + ":" + s.Tag }

// Labels are the image's labels.
func (s Spec) Labels() map[string]string {
	src := s.Source
	if src == "" {
		src = DefaultSource
	}
	return map[string]string{
		LabelSource:  src,
		LabelVersion: s.Version,
		LabelTitle:   Title,
	}
}

func (s Spec) validate() error {
	switch {
	case s.Binary == "":
		return errors.New("no binary")
	case s.Repository == "":
		return errors.New("no repository")
	case s.Tag == "":
		return errors.New("no tag")
	case s.Version == "":
		return errors.New("no version")
	case s.Arch == "":
		return errors.New("no architecture")
	case s.Created.Before(time.Unix(0, 0)):
		return fmt.Errorf("created %s is before the Unix epoch", s.Created)
	}
	return nil
}

// CreatedFromEnv is the creation time of a reproducible build: the
// SOURCE_DATE_EPOCH environment variable (reproducible-builds.org) when it
// is set, else the Unix epoch.
func CreatedFromEnv() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want a non-negative number of seconds", v)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// elfMachines maps the GOARCH values the controller ships for to their ELF
// machine, to refuse a binary built for another architecture.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"386":     elf.EM_386,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
	"riscv64": elf.EM_RISCV,
}

// CheckStatic returns an error unless bin is a statically linked linux ELF
// executable for arch: a FROM-scratch image has no dynamic loader and no
// C library.
func CheckStatic(bin []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("ELF type %s is not an executable", f.Type)
	}
	if m, ok := elfMachines[arch]; ok && f.Machine != m {
		return fmt.Errorf("built for %s, the image is for %s (%s)", f.Machine, arch, m)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (it has an ELF interpreter): build with CGO_ENABLED=0")
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		return fmt.Errorf("dynamically linked against %v: build with CGO_ENABLED=0", libs)
	}
	return nil
}

// Image builds the image of s: FROM scratch, one gzip-compressed layer
// holding the binary at Entrypoint, OCI media types.
func Image(s Spec) (v1.Image, error) {
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("image spec: %w", err)
	}
	bin, err := os.ReadFile(s.Binary)
	if err != nil {
		return nil, err
	}
	if err := CheckStatic(bin, s.Arch); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Binary, err)
	}
	created := s.Created.UTC().Truncate(time.Second)

	layerGz, err := layerTarGz(bin, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerGz)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "COPY node-rotation-controller " + Entrypoint + " # make image (build/image)",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture = s.Arch
	cf.OS = OS
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		User:       User,
		Entrypoint: []string{Entrypoint},
		WorkingDir: WorkingDir,
		Labels:     s.Labels(),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return img, nil
}

// layerTarGz is the layer: a tar with the binary alone, owned by root,
// mode BinaryMode, time mtime; gzip with a zero header, so the same binary
// gives the same bytes (for one Go toolchain: compress/flate's output may
// change between Go releases, as the binary does).
func layerTarGz(bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{
		Typeflag: tar.TypeReg,
		Name:     Entrypoint[1:],
		Mode:     BinaryMode,
		Size:     int64(len(bin)),
		ModTime:  mtime,
		Format:   tar.FormatUSTAR,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
