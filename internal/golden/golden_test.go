package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures; Fatal stops the check the
// way testing does, by leaving the goroutine's function (here: a panic the
// helper recovers).
type recorder struct {
	testing.TB
	errors, fatals []string
}

type stop struct{}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, a...))
}
func (r *recorder) Fatal(a ...any) { r.fatals = append(r.fatals, fmt.Sprint(a...)); panic(stop{}) }
func (r *recorder) Fatalf(format string, a ...any) {
	r.fatals = append(r.fatals, fmt.Sprintf(format, a...))
	panic(stop{})
}
func (r *recorder) failures() int { return len(r.errors) + len(r.fatals) }
func (r *recorder) all() string   { return strings.Join(append(r.errors, r.fatals...), "\n") }

func check(path string, got []byte, update bool) (r *recorder) {
	r = &recorder{}
	old := *Update
	*Update = update
	defer func() {
		*Update = old
		if p := recover(); p != nil {
			if _, ok := p.(stop); !ok {
				panic(p)
			}
		}
	}()
	Check(r, path, got)
	return r
}

func TestCheckCompares(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.golden")
	if err := os.WriteFile(path, []byte("line 1\nline 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := check(path, []byte("line 1\nline 2\n"), false); r.failures() != 0 {
		t.Errorf("equal output failed: %s", r.all())
	}
	r := check(path, []byte("line 1\nline two\n"), false)
	if len(r.errors) != 1 || len(r.fatals) != 0 {
		t.Fatalf("differing output: errors %v fatals %v, want one error", r.errors, r.fatals)
	}
	msg := r.errors[0]
	for _, want := range []string{path + " differs", "go test ./... -update", "--- want\nline 1\nline 2\n", "--- got\nline 1\nline two\n"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	// A trailing newline is a difference.
	if r := check(path, []byte("line 1\nline 2"), false); len(r.errors) != 1 {
		t.Errorf("a missing trailing newline passed")
	}
	// Comparing never writes.
	if b, _ := os.ReadFile(path); string(b) != "line 1\nline 2\n" {
		t.Errorf("the golden file changed to %q", b)
	}
}

func TestCheckMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.golden")
	r := check(path, []byte("x"), false)
	if len(r.fatals) != 1 || len(r.errors) != 0 || !strings.Contains(r.fatals[0], "reading golden file "+path) ||
		!strings.Contains(r.fatals[0], "run `go test ./... -update` to create it") {
		t.Errorf("missing file: errors %v fatals %v", r.errors, r.fatals)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("comparing created the file: %v", err)
	}
}

func TestCheckUpdateWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "out.golden")
	if r := check(path, []byte("first"), true); r.failures() != 0 {
		t.Fatalf("update failed: %s", r.all())
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "first" {
		t.Fatalf("written %q, %v", b, err)
	}
	// Rewriting replaces the content whatever it was.
	if r := check(path, []byte("second"), true); r.failures() != 0 {
		t.Fatalf("rewrite failed: %s", r.all())
	}
	if b, _ := os.ReadFile(path); string(b) != "second" {
		t.Errorf("rewritten to %q", b)
	}
	if r := check(path, []byte("second"), false); r.failures() != 0 {
		t.Errorf("the rewritten file does not compare equal: %s", r.all())
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o644&^umask() {
		t.Errorf("mode = %v, %v", info.Mode(), err)
	}
}

func TestCheckUpdateFailsLoudly(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// A regular file where a directory must go.
	if r := check(filepath.Join(file, "sub", "out.golden"), []byte("x"), true); len(r.fatals) != 1 {
		t.Errorf("mkdir under a file: fatals %v", r.fatals)
	}
	// A directory where the file must go.
	if r := check(dir, []byte("x"), true); len(r.fatals) != 1 {
		t.Errorf("writing over a directory: fatals %v", r.fatals)
	}
}

func TestUpdateFlag(t *testing.T) {
	f := flag.Lookup("update")
	if f == nil || f.DefValue != "false" || !strings.Contains(f.Usage, "rewrite golden files") {
		t.Fatalf("the -update flag = %+v", f)
	}
	if *Update {
		t.Skip("running under -update")
	}
	if err := f.Value.Set("true"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Value.Set("false") }()
	if !*Update {
		t.Error("setting -update does not reach golden.Update")
	}
}

func umask() os.FileMode {
	dir, err := os.MkdirTemp("", "umask")
	if err != nil {
		return 0
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "probe")
	if err := os.WriteFile(p, nil, 0o777); err != nil {
		return 0
	}
	info, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return 0o777 &^ info.Mode().Perm()
}
