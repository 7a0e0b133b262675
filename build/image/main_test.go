package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// TestRun: the command as `make image` runs it prints the digest and the
// archive, and the extracted binary is the one built from.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { println(\"hi\") }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bin")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH, "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Setenv("SOURCE_DATE_EPOCH", "")

	archive := filepath.Join(dir, "image.tar")
	extracted := filepath.Join(dir, "extracted", "bin")
	var stdout bytes.Buffer
	err := run([]string{"-binary", bin, "-out", archive, "-repository", "example.com/test/image",
		"-version", "1.2.3", "-extract", extracted}, &stdout)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stdout.String())
	}
	out := stdout.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^image: example\.com/test/image:1\.2\.3 \(linux/` + runtime.GOARCH + `, created 1970-01-01T00:00:00Z\)$`),
		regexp.MustCompile(`(?m)^image digest: sha256:[0-9a-f]{64}$`),
		regexp.MustCompile(`(?m)^archive: ` + regexp.QuoteMeta(archive) + `$`),
	} {
		if !want.MatchString(out) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	got, _ := os.ReadFile(extracted)
	want, _ := os.ReadFile(bin)
	if len(got) == 0 || !bytes.Equal(got, want) {
		t.Errorf("extracted %d bytes, built %d", len(got), len(want))
	}

	// Flags it refuses.
	for _, args := range [][]string{
		{"-binary", bin, "-repository", "example.com/x", "-version", "1"}, // no -out
		{"-binary", bin, "-out", archive, "-repository", "example.com/x"}, // no -version
		{"-binary", bin, "-out", archive, "-repository", "example.com/x", "-version", "1", "extra"},
	} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("run %s succeeded", strings.Join(args, " "))
		}
	}
}
