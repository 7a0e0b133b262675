package imagebuild_test

import (
	"archive/tar"
	"bytes"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/noderotation/node-rotation-controller/build/image/imagebuild"
)

// helloOutput is what the test program prints.
const helloOutput = "hello from a FROM-scratch image"

// buildHello compiles a tiny static linux program into a fresh directory,
// with the flags `make image` uses, and returns its path.
func buildHello(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to build the test program: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	prog := "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\tfmt.Println(\"" + helloOutput + "\", len(os.Args)-1)\n}\n"
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command(goBin, "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w", "-o", bin, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOWORK=off", "GO111MODULE=on")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build of the test program: %v\n%s", err, out)
	}
	return bin
}

func spec(bin string) imagebuild.Spec {
	return imagebuild.Spec{
		Binary:     bin,
		Repository: "ghcr.io/noderotation/node-rotation-controller",
		Tag:        "0.1.0-test",
		Version:    "0.1.0",
		Arch:       runtime.GOARCH,
		Created:    time.Unix(0, 0).UTC(),
	}
}

// build writes the archive of s into a fresh directory.
func build(t *testing.T, s imagebuild.Spec) (string, imagebuild.Result) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "image.tar")
	res, err := imagebuild.Build(s, out)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return out, res
}

func open(t *testing.T, archive string) *imagebuild.Archive {
	t.Helper()
	a, err := imagebuild.Open(archive)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func TestImageConfig(t *testing.T) {
	s := spec(buildHello(t))
	archive, res := build(t, s)
	a := open(t, archive)

	if got, _ := a.Image.Digest(); got != res.Digest {
		t.Errorf("digest read back %s, Build reported %s", got, res.Digest)
	}
	if got, _ := a.Image.ConfigName(); got != res.ConfigDigest {
		t.Errorf("config digest read back %s, Build reported %s", got, res.ConfigDigest)
	}
	if err := validate.Image(a.Image); err != nil {
		t.Errorf("OCI layout image does not validate: %v", err)
	}
	if mt, _ := a.Image.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s, want %s", mt, types.OCIManifestSchema1)
	}

	cf, err := a.Image.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if !cf.Created.Time.Equal(time.Unix(0, 0)) {
		t.Errorf("created %s, want the Unix epoch", cf.Created.Time)
	}
	want := v1.Config{
		User:       "65532:65532",
		Entrypoint: []string{"/node-rotation-controller"},
		WorkingDir: "/",
		Labels: map[string]string{
			"org.opencontainers.image.source":  "https://github.com/noderotation/node-rotation-controller",
			"org.opencontainers.image.version": "0.1.0",
			"org.opencontainers.image.title":   "node-rotation-controller",
		},
	}
	// Nothing else: no Cmd, no Env, no shell form, no exposed ports.
	if !reflect.DeepEqual(cf.Config, want) {
		t.Errorf("config\n got %+v\nwant %+v", cf.Config, want)
	}
	if len(cf.History) != 1 || len(cf.RootFS.DiffIDs) != 1 {
		t.Errorf("history %d entries, rootfs %d diff IDs; want 1 and 1", len(cf.History), len(cf.RootFS.DiffIDs))
	}

	// index.json names the image for podman (ref.name) and docker
	// (io.containerd.image.name).
	desc := a.Index.Manifests[0]
	ref := "ghcr.io/noderotation/node-rotation-controller:0.1.0-test"
	for _, k := range []string{"org.opencontainers.image.ref.name", "io.containerd.image.name"} {
		if desc.Annotations[k] != ref {
			t.Errorf("index.json annotation %s = %q, want %q", k, desc.Annotations[k], ref)
		}
	}
	if desc.Platform == nil || desc.Platform.OS != "linux" || desc.Platform.Architecture != runtime.GOARCH {
		t.Errorf("index.json platform %+v, want linux/%s", desc.Platform, runtime.GOARCH)
	}
	if desc.ArtifactType != "" {
		t.Errorf("index.json artifactType %q: an image is no artifact", desc.ArtifactType)
	}
}

// TestOneStaticBinary: one layer, one regular file in it, the binary the
// image was built from, owned by root, read and execute only; no shell.
func TestOneStaticBinary(t *testing.T) {
	bin := buildHello(t)
	archive, _ := build(t, spec(bin))
	a := open(t, archive)

	layers, err := a.Image.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
	}
	files, err := imagebuild.LayerFiles(layers[0])
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, f.Header.Name)
	}
	if !slices.Equal(names, []string{"node-rotation-controller"}) {
		t.Fatalf("layer entries %q, want the binary alone", names)
	}
	for _, shell := range []string{"bin/sh", "bin/bash", "bin/busybox"} {
		if slices.Contains(names, shell) {
			t.Errorf("the image has a shell: %s", shell)
		}
	}
	h := files[0].Header
	if h.Typeflag != tar.TypeReg || h.Mode != 0o555 || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
		t.Errorf("binary entry: type %q mode %o owner %d:%d (%q:%q); want a regular file 0555 owned by 0:0",
			h.Typeflag, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname)
	}
	if !h.ModTime.Equal(time.Unix(0, 0)) {
		t.Errorf("binary mtime %s, want the image's created time", h.ModTime)
	}
	want, _ := os.ReadFile(bin)
	if !bytes.Equal(files[0].Data, want) {
		t.Errorf("the binary in the layer (%d bytes) is not the one built from (%d bytes)", len(files[0].Data), len(want))
	}
	if err := imagebuild.CheckStatic(files[0].Data, runtime.GOARCH); err != nil {
		t.Errorf("the binary in the layer: %v", err)
	}
}

// TestArchiveLayout: the tar is an OCI layout plus docker's manifest.json,
// entries sorted, owned by 0:0, at the created time; manifest.json points at
// blobs of the archive and describes the same image.
func TestArchiveLayout(t *testing.T) {
	archive, res := build(t, spec(buildHello(t)))
	a := open(t, archive)

	var names []string
	for _, h := range a.Entries {
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: owner %d:%d (%q:%q), want 0:0", h.Name, h.Uid, h.Gid, h.Uname, h.Gname)
		}
		if !h.ModTime.Equal(time.Unix(0, 0)) {
			t.Errorf("%s: mtime %s, want the created time", h.Name, h.ModTime)
		}
		wantMode := int64(0o644)
		if h.Typeflag == tar.TypeDir {
			wantMode = 0o755
		}
		if h.Mode != wantMode {
			t.Errorf("%s: mode %o, want %o", h.Name, h.Mode, wantMode)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("tar entries not sorted: %q", names)
	}
	m, err := a.Image.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	blob := func(h v1.Hash) string { return "blobs/sha256/" + h.Hex }
	want := []string{"blobs/", "blobs/sha256/", blob(res.Digest), blob(m.Config.Digest), blob(m.Layers[0].Digest),
		"index.json", "manifest.json", "oci-layout"}
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tar entries\n got %q\nwant %q", names, want)
	}

	// manifest.json: docker load's view.
	d := a.Docker[0]
	if !slices.Equal(d.RepoTags, []string{res.Reference}) {
		t.Errorf("manifest.json RepoTags %q, want [%q]", d.RepoTags, res.Reference)
	}
	for _, p := range append([]string{d.Config}, d.Layers...) {
		if !slices.Contains(names, p) {
			t.Errorf("manifest.json points at %s, not in the archive", p)
		}
	}
	if err := validate.Image(a.DockerImage); err != nil {
		t.Errorf("the image manifest.json describes does not validate: %v", err)
	}
	if got, _ := a.DockerImage.ConfigName(); got != res.ConfigDigest {
		t.Errorf("manifest.json's image ID %s, the OCI image's %s", got, res.ConfigDigest)
	}
	dl, _ := a.DockerImage.Layers()
	if len(dl) != 1 {
		t.Fatalf("manifest.json: %d layers, want 1", len(dl))
	}
	if got, _ := dl[0].Digest(); got != m.Layers[0].Digest {
		t.Errorf("manifest.json layer %s, the OCI manifest's %s", got, m.Layers[0].Digest)
	}
}

// TestReproducible: two builds, from copies of the binary with other
// mtimes, at other paths, give the same bytes; another created time gives
// another digest.
func TestReproducible(t *testing.T) {
	bin := buildHello(t)
	copyBin := filepath.Join(t.TempDir(), "other-name")
	data, _ := os.ReadFile(bin)
	if err := os.WriteFile(copyBin, data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(copyBin, time.Now().Add(time.Hour), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}

	a1, r1 := build(t, spec(bin))
	a2, r2 := build(t, spec(copyBin))
	if r1 != r2 {
		t.Errorf("two builds: %+v and %+v", r1, r2)
	}
	b1, _ := os.ReadFile(a1)
	b2, _ := os.ReadFile(a2)
	if !bytes.Equal(b1, b2) {
		t.Errorf("two builds wrote different archives (%d and %d bytes)", len(b1), len(b2))
	}

	later := spec(bin)
	later.Created = time.Unix(1700000000, 0)
	a3, r3 := build(t, later)
	if r3.Digest == r1.Digest {
		t.Errorf("another created time gave the same digest %s", r1.Digest)
	}
	_, r4 := build(t, later)
	if r4 != r3 {
		t.Errorf("two builds at SOURCE_DATE_EPOCH 1700000000: %+v and %+v", r3, r4)
	}
	for _, h := range open(t, a3).Entries {
		if !h.ModTime.Equal(later.Created) {
			t.Errorf("%s: mtime %s, want %s", h.Name, h.ModTime, later.Created)
		}
	}
}

// TestRunExtracted: the binary read back from the archive runs and prints
// what the program prints.
func TestRunExtracted(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image's linux binary runs on linux only")
	}
	archive, _ := build(t, spec(buildHello(t)))
	a := open(t, archive)
	dst := filepath.Join(t.TempDir(), "extracted", path.Base(imagebuild.Entrypoint))
	if err := imagebuild.ExtractEntrypoint(a.Image, dst); err != nil {
		t.Fatal(err)
	}
	// Twice: a second extraction replaces the read-only first one.
	if err := imagebuild.ExtractEntrypoint(a.Image, dst); err != nil {
		t.Fatalf("second extraction: %v", err)
	}
	if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o555 {
		t.Errorf("extracted binary: %v, mode %v; want 0555", err, st.Mode())
	}
	out, err := exec.Command(dst, "a", "b").CombinedOutput()
	if err != nil {
		t.Fatalf("running the extracted binary: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), helloOutput+" 2"; got != want {
		t.Errorf("the extracted binary printed %q, want %q", got, want)
	}
}

func TestRefuses(t *testing.T) {
	hello := buildHello(t)
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	cases := map[string]func(*imagebuild.Spec){
		"another architecture": func(s *imagebuild.Spec) { s.Arch = other },
		"no tag":               func(s *imagebuild.Spec) { s.Tag = "" },
		"bad name":             func(s *imagebuild.Spec) { s.Repository = "Not A Repository" },
		"not a binary":         func(s *imagebuild.Spec) { s.Binary = "imagebuild_test.go" },
		"missing binary":       func(s *imagebuild.Spec) { s.Binary = filepath.Join(t.TempDir(), "none") },
		"before the epoch":     func(s *imagebuild.Spec) { s.Created = time.Unix(-1, 0) },
	}
	// A dynamically linked executable, where the system has one.
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if data, err := os.ReadFile(p); err == nil && imagebuild.CheckStatic(data, runtime.GOARCH) != nil {
			cases["dynamically linked "+p] = func(s *imagebuild.Spec) { s.Binary = p }
			break
		}
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec(hello)
			mutate(&s)
			out := filepath.Join(t.TempDir(), "image.tar")
			if _, err := imagebuild.Build(s, out); err == nil {
				t.Fatalf("Build succeeded")
			} else {
				t.Log(err)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("a failed build left %s: %v", out, err)
			}
		})
	}
}

func TestCreatedFromEnv(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	if got, err := imagebuild.CreatedFromEnv(); err != nil || !got.Equal(time.Unix(0, 0)) {
		t.Errorf("unset: %s, %v; want the Unix epoch", got, err)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	if got, err := imagebuild.CreatedFromEnv(); err != nil || !got.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("1700000000: %s, %v", got, err)
	}
	for _, bad := range []string{"-1", "yesterday", "1.5"} {
		t.Setenv("SOURCE_DATE_EPOCH", bad)
		if _, err := imagebuild.CreatedFromEnv(); err == nil {
			t.Errorf("SOURCE_DATE_EPOCH=%s accepted", bad)
		}
	}
}
