package imagebuild

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// DockerManifest is the name of the docker-save manifest at the archive's
// root, beside the OCI layout's index.json and oci-layout.
const DockerManifest = "manifest.json"

// Result is what Build and WriteArchive report.
type Result struct {
	// Reference is the image's name, repository:tag.
	Reference string
	// Digest is the digest of the image manifest: the image digest a
	// registry shows after a push, and `podman images --digests`.
	Digest v1.Hash
	// ConfigDigest is the digest of the image config: the image ID that
	// `docker images` and `podman images` show.
	ConfigDigest v1.Hash
}

// Build builds the image of s and writes its archive to out (replacing it
// only once the archive is complete).
func Build(s Spec, out string) (Result, error) {
	img, err := Image(s)
	if err != nil {
		return Result{}, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return Result{}, err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	res, err := WriteArchive(tmp, img, s.Reference(), s.Created)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), out)
	}
	return res, err
}

// WriteArchive writes img, named ref (repository:tag), as a tar to w. The tar
// is an OCI image layout (oci-layout, index.json naming the image in both
// AnnotationRefName and AnnotationImageName, blobs/sha256/…) plus the
// docker-save manifest.json that points at the same blobs: podman loads the
// layout, docker the one or the other. Entries are sorted by name, every
// one owned by 0:0 with time mtime, so the same image gives the same bytes.
func WriteArchive(w io.Writer, img v1.Image, ref string, mtime time.Time) (Result, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return Result{}, fmt.Errorf("image name %q: %w", ref, err)
	}
	res := Result{Reference: tag.String()}
	if res.Digest, err = img.Digest(); err != nil {
		return Result{}, err
	}
	if res.ConfigDigest, err = img.ConfigName(); err != nil {
		return Result{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return Result{}, err
	}

	// The OCI layout, written by go-containerregistry into a scratch
	// directory, then put into the tar in a fixed order.
	dir, err := os.MkdirTemp("", "imagebuild-layout-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(dir)
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{
		Add: plainImage{img},
		Descriptor: v1.Descriptor{
			Annotations: map[string]string{
				AnnotationRefName:   res.Reference,
				AnnotationImageName: res.Reference,
			},
			Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture},
		},
	})
	if _, err := layout.Write(dir, idx); err != nil {
		return Result{}, fmt.Errorf("OCI layout: %w", err)
	}

	// docker save's manifest.json, pointing at the layout's blobs.
	m, err := img.Manifest()
	if err != nil {
		return Result{}, err
	}
	dm := tarball.Descriptor{
		Config:   blobPath(m.Config.Digest),
		RepoTags: []string{res.Reference},
	}
	for _, l := range m.Layers {
		dm.Layers = append(dm.Layers, blobPath(l.Digest))
	}
	dmJSON, err := json.Marshal(tarball.Manifest{dm})
	if err != nil {
		return Result{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, DockerManifest), dmJSON, 0o644); err != nil {
		return Result{}, err
	}

	if err := tarDir(w, dir, mtime); err != nil {
		return Result{}, err
	}
	return res, nil
}

// plainImage is an image whose descriptor in index.json is the one docker
// save writes: media type, digest and size, without the artifactType that
// go-containerregistry derives from the config's media type (meant for the
// referrers API, not for a loader).
type plainImage struct{ v1.Image }

func (p plainImage) Descriptor() (*v1.Descriptor, error) {
	var d v1.Descriptor
	var err error
	if d.MediaType, err = p.MediaType(); err != nil {
		return nil, err
	}
	if d.Digest, err = p.Digest(); err != nil {
		return nil, err
	}
	if d.Size, err = p.Size(); err != nil {
		return nil, err
	}
	return &d, nil
}

func blobPath(h v1.Hash) string { return path.Join("blobs", h.Algorithm, h.Hex) }

// tarDir writes the tree under dir as a tar: entries sorted by name,
// directories 0755 and files 0644, owned by 0:0, all at time mtime.
func tarDir(w io.Writer, dir string, mtime time.Time) error {
	mtime = mtime.UTC().Truncate(time.Second)
	var names []string
	isDir := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			rel += "/"
			isDir[rel] = true
		case !d.Type().IsRegular():
			return fmt.Errorf("%s: not a regular file", p)
		}
		names = append(names, rel)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, n := range names {
		hdr := &tar.Header{Name: n, ModTime: mtime, Format: tar.FormatUSTAR}
		if isDir[n] {
			hdr.Typeflag, hdr.Mode = tar.TypeDir, 0o755
			if err := tw.WriteHeader(hdr); err != nil {
				return err
			}
			continue
		}
		hdr.Typeflag, hdr.Mode = tar.TypeReg, 0o644
		if err := copyFile(tw, hdr, filepath.Join(dir, filepath.FromSlash(n))); err != nil {
			return err
		}
	}
	return tw.Close()
}

func copyFile(tw *tar.Writer, hdr *tar.Header, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	hdr.Size = st.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err == nil && n != hdr.Size {
		err = fmt.Errorf("%s: size changed while writing", p)
	}
	return err
}

// Archive is an image archive read back: its tar entries, its OCI layout
// and its docker manifest, checked against each other by Open.
type Archive struct {
	// Entries are the tar's headers, in the tar's order.
	Entries []*tar.Header
	// Index is the OCI layout's index.json.
	Index *v1.IndexManifest
	// Image is the one image of the OCI layout.
	Image v1.Image
	// Docker is the docker-save manifest.json.
	Docker tarball.Manifest
	// DockerImage is the image as docker's manifest.json describes it.
	DockerImage v1.Image

	dir string
}

// Close removes the scratch directory the archive was unpacked into.
func (a *Archive) Close() error { return os.RemoveAll(a.dir) }

// Open reads an archive written by WriteArchive: it unpacks it into a
// scratch directory, opens the OCI layout (which must hold one image) and
// the docker manifest.json, and checks that both name the same config and
// layers. Close the Archive when done.
func Open(archive string) (_ *Archive, err error) {
	dir, err := os.MkdirTemp("", "imagebuild-read-")
	if err != nil {
		return nil, err
	}
	a := &Archive{dir: dir}
	defer func() {
		if err != nil {
			a.Close()
			err = fmt.Errorf("%s: %w", archive, err)
		}
	}()
	if a.Entries, err = untar(archive, dir); err != nil {
		return nil, err
	}

	lp, err := layout.FromPath(dir)
	if err != nil {
		return nil, err
	}
	idx, err := lp.ImageIndex()
	if err != nil {
		return nil, err
	}
	if a.Index, err = idx.IndexManifest(); err != nil {
		return nil, err
	}
	if len(a.Index.Manifests) != 1 {
		return nil, fmt.Errorf("index.json lists %d manifests, want 1", len(a.Index.Manifests))
	}
	if a.Image, err = idx.Image(a.Index.Manifests[0].Digest); err != nil {
		return nil, err
	}

	raw, err := os.ReadFile(filepath.Join(dir, DockerManifest))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &a.Docker); err != nil {
		return nil, fmt.Errorf("%s: %w", DockerManifest, err)
	}
	if len(a.Docker) != 1 {
		return nil, fmt.Errorf("%s lists %d images, want 1", DockerManifest, len(a.Docker))
	}
	if a.DockerImage, err = tarball.ImageFromPath(archive, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", DockerManifest, err)
	}
	return a, a.crossCheck()
}

// crossCheck: manifest.json's config and layers are the OCI manifest's.
func (a *Archive) crossCheck() error {
	m, err := a.Image.Manifest()
	if err != nil {
		return err
	}
	d := a.Docker[0]
	if want := blobPath(m.Config.Digest); d.Config != want {
		return fmt.Errorf("%s config %s, the OCI manifest's is %s", DockerManifest, d.Config, want)
	}
	if len(d.Layers) != len(m.Layers) {
		return fmt.Errorf("%s has %d layers, the OCI manifest %d", DockerManifest, len(d.Layers), len(m.Layers))
	}
	for i, l := range m.Layers {
		if want := blobPath(l.Digest); d.Layers[i] != want {
			return fmt.Errorf("%s layer %d is %s, the OCI manifest's is %s", DockerManifest, i, d.Layers[i], want)
		}
	}
	return nil
}

// untar unpacks the archive (regular files and directories only, no path
// outside dir) and returns its headers.
func untar(archive, dir string) ([]*tar.Header, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hdrs []*tar.Header
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return hdrs, nil
		}
		if err != nil {
			return nil, err
		}
		hdrs = append(hdrs, hdr)
		clean := path.Clean(hdr.Name)
		if !fs.ValidPath(clean) || clean == "." {
			return nil, fmt.Errorf("tar entry %q: not a plain relative path", hdr.Name)
		}
		p := filepath.Join(dir, filepath.FromSlash(clean))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, err
			}
			if err := writeFrom(p, tr); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("tar entry %q: type %q, want a file or directory", hdr.Name, hdr.Typeflag)
		}
	}
}

func writeFrom(p string, r io.Reader) error {
	out, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// File is one entry of a layer.
type File struct {
	Header *tar.Header
	Data   []byte
}

// LayerFiles returns every entry of the layer, with the contents of the
// regular files.
func LayerFiles(l v1.Layer) ([]File, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var files []File
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, tr); err != nil {
			return nil, err
		}
		files = append(files, File{Header: hdr, Data: buf.Bytes()})
	}
}

// ExtractEntrypoint writes the image's entrypoint file, as its layers hold
// it, to dst with the layer's mode: to run the very binary the image ships.
func ExtractEntrypoint(img v1.Image, dst string) error {
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	if len(cf.Config.Entrypoint) == 0 {
		return fmt.Errorf("the image has no entrypoint")
	}
	want := path.Clean(cf.Config.Entrypoint[0])
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	var found *File
	for _, l := range layers {
		files, err := LayerFiles(l)
		if err != nil {
			return err
		}
		for i := range files {
			if path.Clean("/"+files[i].Header.Name) == want {
				found = &files[i]
			}
		}
	}
	if found == nil {
		return fmt.Errorf("entrypoint %s is not in the image's layers", want)
	}
	if found.Header.Typeflag != tar.TypeReg {
		return fmt.Errorf("entrypoint %s is not a regular file", want)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	// A previous extraction is read-only: replace it, do not open it.
	if err := os.Remove(dst); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := os.WriteFile(dst, found.Data, 0o600); err != nil {
		return err
	}
	return os.Chmod(dst, fs.FileMode(found.Header.Mode).Perm())
}
