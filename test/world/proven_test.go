package world

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A throwaway repository with proven.sh, suites.sh and testbin.sh, a
// Makefile naming two Karpenter rows and one Kubernetes row, and one file
// of each input group and one doc: what the plan says of each row, after
// a record and after an edit (docs/test-world.md, "Rows run when their
// inputs change").
func provenRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"proven.sh", "suites.sh", "testbin.sh"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		write(t, dir, "test/world/"+f, string(b))
		if err := os.Chmod(filepath.Join(dir, "test/world", f), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, dir, "Makefile", "GOTOOLCHAIN ?= go1.27.3\nKARPENTER_MATRIX ?= 1.6.4 1.0.8\nKUBERNETES_MATRIX ?= 1.30.14\nOTHER ?= x\n")
	write(t, dir, "go.mod", "module github.com/noderotation/node-rotation-controller\n\ngo 1.26.9\n\nrequire github.com/other v1\n")
	write(t, dir, "go.sum", "k8s.io/api v0.37.2 h1:x=\nsigs.k8s.io/karpenter v1.15.0 h1:y=\ngithub.com/other v1 h1:z=\n")
	const mod = "github.com/noderotation/node-rotation-controller/"
	write(t, dir, "cmd/node-rotation-controller/main.go", "package main\n\nimport (\n\t_ \""+mod+"internal/observe\"\n\t_ \""+mod+"internal/markers\"\n)\n")
	write(t, dir, "internal/observe/observe.go", "package observe\n\nimport (\n\t_ \"sigs.k8s.io/karpenter/pkg/apis/v1\"\n\t_ \""+mod+"engine\"\n\t_ \""+mod+"internal/conditional\"\n)\n")
	write(t, dir, "internal/observe/observe_test.go", "package observe\n")
	write(t, dir, "internal/conditional/write.go", "package conditional\n")
	write(t, dir, "internal/markers/markers.go", "package markers\n\nvar key = v1alpha1.KarpenterDoNotDisrupt\n")
	write(t, dir, "engine/engine.go", "package engine\n")
	// imports Karpenter, but the rows never compile it
	write(t, dir, "cmd/rotationctl/main.go", "package main\n\nimport _ \"sigs.k8s.io/karpenter/pkg/apis/v1\"\n")
	write(t, dir, "api/v1alpha1/types.go", "package v1alpha1\n")
	write(t, dir, "test/e2e/smoke_test.go", "package e2e\n")
	write(t, dir, "test/process/process.go", "package process\n")
	write(t, dir, "docs/test-world.md", "# docs\n")
	write(t, dir, "README.md", "# r\n\n<!-- versions table: begin -->\nold\n<!-- versions table: end -->\n\nafter\n")
	git(t, dir, "init", "-q")
	git(t, dir, "add", ".")
	git(t, dir, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
	return dir
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// proven runs proven.sh in dir, with a matrix in the environment that
// the script must not read: the rows are the Makefile's.
func proven(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := provenErr(dir, args...)
	if err != nil {
		t.Fatalf("proven.sh %v: %v\n%s", args, err, out)
	}
	return out
}

func provenErr(dir string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(dir, "test/world/proven.sh"), args...)
	cmd.Env = append(os.Environ(), "KARPENTER_MATRIX=1.6.4", "KUBERNETES_MATRIX=", "NRC_PROVEN_FILE=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// plan: each row's first word, run or reuse, and the line.
func plan(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(proven(t, dir, "plan")), "\n") {
		f := strings.Fields(l)
		out[f[1]] = l
	}
	return out
}

func TestTheGateRunsTheBookendAndEveryRowWhoseInputsChanged(t *testing.T) {
	dir := provenRepo(t)
	for row, l := range plan(t, dir) {
		if !strings.HasPrefix(l, "run ") {
			t.Errorf("with no record, %s: %q, want run", row, l)
		}
	}
	proven(t, dir, "record", "matrix:1.6.4=passes", "matrix:1.0.8=passes", "kubernetes:1.30.14=fails: its cluster does not come up")
	p := plan(t, dir)
	if !strings.HasPrefix(p["matrix:1.0.8"], "run matrix:1.0.8 the bookend row") {
		t.Errorf("the oldest Karpenter row: %q, want run as the bookend", p["matrix:1.0.8"])
	}
	if !strings.HasPrefix(p["matrix:1.6.4"], "reuse matrix:1.6.4 proven at ") || !strings.HasSuffix(p["matrix:1.6.4"], "inputs unchanged") {
		t.Errorf("a passing row, inputs unchanged: %q, want reuse", p["matrix:1.6.4"])
	}
	if !strings.HasPrefix(p["kubernetes:1.30.14"], "run kubernetes:1.30.14 recorded at ") {
		t.Errorf("a row recorded failing: %q, want run", p["kubernetes:1.30.14"])
	}

	for _, edit := range []struct {
		file, group string
	}{
		{"docs/test-world.md", ""},
		{"README.md", ""},
		{"engine/engine.go", ""},
		{"internal/observe/observe_test.go", ""},
		{"cmd/rotationctl/main.go", ""},
		{"test/world/proven.yaml", ""},
		{"test/world/testbin.sh", "test/world"},
		{"internal/observe/observe.go", "controller"},
		{"internal/conditional/write.go", "controller"},
		{"internal/markers/markers.go", "controller"},
		{"cmd/node-rotation-controller/main.go", "controller"},
		{"api/v1alpha1/types.go", "api"},
		{"test/e2e/smoke_test.go", "e2e"},
		{"go.sum", "modules"},
		{"go.mod", "modules"},
		{"Makefile", ""},
		{"Makefile", "modules"},
	} {
		t.Run(edit.file+":"+edit.group, func(t *testing.T) {
			p := filepath.Join(dir, edit.file)
			orig, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(p, orig, 0o644)
			line := "\n# edited\n"
			switch {
			case edit.file == "go.sum":
				line = "sigs.k8s.io/controller-runtime v0.23.0 h1:w=\n"
			case edit.file == "go.mod":
				line = "replace sigs.k8s.io/karpenter => ../karpenter\n"
			case edit.file == "Makefile" && edit.group != "":
				line = "IMAGE_GOBUILD_FLAGS := -trimpath\n"
			}
			if err := os.WriteFile(p, append(append([]byte{}, orig...), line...), 0o644); err != nil {
				t.Fatal(err)
			}
			got := plan(t, dir)["matrix:1.6.4"]
			if edit.group == "" {
				if !strings.HasPrefix(got, "reuse ") {
					t.Errorf("after editing %s (no row's input): %q, want reuse", edit.file, got)
				}
				return
			}
			if !strings.HasPrefix(got, "run matrix:1.6.4 its inputs changed since it was proven at ") || !strings.HasSuffix(got, ": "+edit.group) {
				t.Errorf("after editing %s: %q, want run, naming the group %s", edit.file, got, edit.group)
			}
		})
	}
	// a change to a line of go.sum or go.mod of a module the rows do not
	// depend on for Karpenter or the API server
	b, _ := os.ReadFile(filepath.Join(dir, "go.sum"))
	write(t, dir, "go.sum", string(b)+"github.com/another v2 h1:q=\n")
	b, _ = os.ReadFile(filepath.Join(dir, "go.mod"))
	write(t, dir, "go.mod", string(b)+"require github.com/another v2\n")
	if got := plan(t, dir)["matrix:1.6.4"]; !strings.HasPrefix(got, "reuse ") {
		t.Errorf("after a go.sum and go.mod line of another module: %q, want reuse", got)
	}
}

// A record made from a snapshot is of the inputs as the run began: a row
// whose inputs changed while it ran is recorded not proven, and the
// record says so and fails; the commit is marked when the tree, untracked
// files included, differs from HEAD.
func TestTheRecordIsOfTheInputsTheRunBeganWith(t *testing.T) {
	dir := provenRepo(t)
	snap := filepath.Join(t.TempDir(), "snapshot")
	if err := os.WriteFile(snap, []byte(proven(t, dir, "snapshot")), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "internal/observe/new.go", "package observe\n")
	out, err := provenErr(dir, "record", "--from", snap, "matrix:1.6.4=passes")
	if err == nil || !strings.Contains(out, "inputs changed during the run: controller") {
		t.Errorf("record after an edit during the run: %v\n%s\nwant a failure naming the group", err, out)
	}
	if got := strings.TrimSpace(proven(t, dir, "recorded", "matrix:1.6.4", "result")); got != "not proven: its inputs changed during the run: controller" {
		t.Errorf("result %q", got)
	}
	if got := strings.TrimSpace(proven(t, dir, "recorded", "matrix:1.6.4", "commit")); strings.Contains(got, "uncommitted") {
		t.Errorf("commit %q: the snapshot's, taken on a clean tree", got)
	}
	if got := strings.TrimSpace(proven(t, dir, "snapshot")); !strings.Contains(got, "(with uncommitted changes)") {
		t.Errorf("snapshot with an untracked file: %q, want the commit marked", got)
	}
	if err := os.Remove(filepath.Join(dir, "internal/observe/new.go")); err != nil {
		t.Fatal(err)
	}
	if got := plan(t, dir)["matrix:1.6.4"]; !strings.HasPrefix(got, "run matrix:1.6.4 recorded at ") {
		t.Errorf("a row recorded not proven, its inputs as the snapshot's again: %q, want run", got)
	}
}

// The record keeps the rows a run did not give, and README.md's table is
// written from it: the rows' results and where they were proven.
func TestTheRecordKeepsOtherRowsAndWritesTheREADMETable(t *testing.T) {
	dir := provenRepo(t)
	proven(t, dir, "record", "matrix:1.6.4=passes")
	proven(t, dir, "record", `matrix:1.0.8=fails: "quoted" \ text`)
	if got := proven(t, dir, "recorded", "matrix:1.0.8", "result"); strings.TrimSpace(got) != `fails: "quoted" \ text` {
		t.Errorf("a result with quotes and a backslash read back as %q", got)
	}
	proven(t, dir, "record", "matrix:1.0.8=fails")
	if got := proven(t, dir, "recorded", "matrix:1.6.4", "result"); strings.TrimSpace(got) != "passes" {
		t.Errorf("matrix:1.6.4's result after a record of another row: %q, want passes", got)
	}
	if got := proven(t, dir, "recorded", "kubernetes:1.30.14", "result"); strings.TrimSpace(got) != "" {
		t.Errorf("a row never recorded: %q, want none", got)
	}
	proven(t, dir, "readme")
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	for _, want := range []string{
		"<!-- versions table: begin -->\n| Karpenter | Kubernetes | tested by | result |\n",
		"| v1.6.4 | v1.37.2 | the e2e smoke and the happy-path rotation: `make test-matrix` at ",
		"; a submission that changes its inputs | passes |\n",
		"| v1.0.8 | v1.37.2 | the e2e smoke and the happy-path rotation, the controller run with `-placeholder-hostname-preference=false`: `make test-matrix` at ",
		"; every submission (the bookend row) | fails |\n",
		"the happy-path rotation: `make test-matrix`; a submission that changes its inputs | not proven: no record in test/world/proven.yaml |\n<!-- versions table: end -->\n\nafter\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("README.md has no %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\nold\n") {
		t.Errorf("README.md kept the old table:\n%s", text)
	}
}
