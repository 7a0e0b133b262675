package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// cliPlatforms are the platforms rotationctl is archived for.
var cliPlatforms = []struct{ os, arch string }{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// checksumsName is the sha256sum-format list of the archives.
const checksumsName = "checksums.txt"

// archiveName is rotationctl's archive for one platform.
func archiveName(version, goos, arch string) string {
	return fmt.Sprintf("rotationctl_%s_%s_%s.tar.gz", version, goos, arch)
}

// archiveCLI writes one tar.gz per platform holding rotationctl, the
// kubectl completion script and the LICENSE, and checksums.txt. Every
// entry is owned by root with the release's time, and gzip's header is
// zero, so the same binaries give the same bytes.
func archiveCLI(c config, created time.Time, m *manifest) error {
	license, err := os.ReadFile(filepath.Join(c.repoRoot, "LICENSE"))
	if err != nil {
		return err
	}
	complete, err := os.ReadFile(filepath.Join(c.repoRoot, "cmd", "rotationctl", "kubectl_complete-noderotation"))
	if err != nil {
		return err
	}
	var sums strings.Builder
	for _, p := range cliPlatforms {
		bin, err := os.ReadFile(filepath.Join(c.dist, "bin", p.os+"_"+p.arch, "rotationctl"))
		if err != nil {
			return err
		}
		data, err := tarGz(created, []tarFile{
			{"rotationctl", 0o755, bin}, {"kubectl_complete-noderotation", 0o755, complete}, {"LICENSE", 0o644, license},
		})
		if err != nil {
			return err
		}
		name := archiveName(c.version, p.os, p.arch)
		if err := os.WriteFile(filepath.Join(c.dist, name), data, 0o644); err != nil {
			return err
		}
		if err := m.add(c.dist, name, "archive", p.os, p.arch); err != nil {
			return err
		}
		fmt.Fprintf(&sums, "%s  %s\n", m.Artifacts[len(m.Artifacts)-1].SHA256, name)
	}
	if err := os.WriteFile(filepath.Join(c.dist, checksumsName), []byte(sums.String()), 0o644); err != nil {
		return err
	}
	return m.add(c.dist, checksumsName, "checksums", "", "")
}

type tarFile struct {
	name string
	mode int64
	data []byte
}

func tarGz(mtime time.Time, files []tarFile) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
