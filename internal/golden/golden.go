// Package golden compares test output with golden files and rewrites them
// under `go test ./... -update`. Every test package imports it, so the
// -update flag is defined in each test binary `go test ./...` builds.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// Update is set by `go test ./... -update`.
var Update = flag.Bool("update", false, "rewrite golden files instead of comparing with them")

// Check compares got with the file at path, or rewrites the file when
// -update is set. A missing golden file fails with a hint to run -update.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file %s (run `go test ./... -update` to create it): %v", path, err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from the output; review and run `go test ./... -update`.\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}
