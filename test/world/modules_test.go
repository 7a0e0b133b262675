package world

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// The repository's Go modules (the controller's, the chart tests', the
// PromQL tests', the image builder's and the release tool's) require one
// version of every module they share. The Go build cache keys a compiled
// package by its dependencies' versions too, so a package of client-go
// built for the controller's tests is reused by the chart's and the
// release's only when x/net, x/sys and the rest are the same there: on
// 2026-12-05, `go list -deps -test` of the five counted 2,486 packages to
// compile with their differing versions, 1,451 once aligned
// (docs/test-world.md, "CI time").
func TestTheRepositorysModulesRequireOneVersionOfEachModule(t *testing.T) {
	files := repositoryGoMods(t)
	for _, want := range []string{"go.mod", "test/chart/go.mod", "test/promql/go.mod", "build/image/go.mod", "build/release/go.mod"} {
		if !slices.Contains(files, want) {
			t.Fatalf("the walk from the repository's root found %v, not %s", files, want)
		}
	}
	versions := map[string]map[string][]string{} // module path → version → directories requiring it
	for _, file := range files {
		for path, version := range requiredVersions(t, file) {
			if versions[path] == nil {
				versions[path] = map[string][]string{}
			}
			versions[path][version] = append(versions[path][version], filepath.Dir(file))
		}
	}
	for _, path := range slices.Sorted(maps.Keys(versions)) {
		byVersion := versions[path]
		if len(byVersion) == 1 {
			continue
		}
		listed := slices.SortedFunc(maps.Keys(byVersion), semver.Compare)
		newest := listed[len(listed)-1]
		var where, behind []string
		for _, v := range listed {
			where = append(where, v+" in "+strings.Join(byVersion[v], ", "))
			if v != newest {
				behind = append(behind, byVersion[v]...)
			}
		}
		t.Errorf("%s: %s; run `go get %s@%s` in %s", path, strings.Join(where, "; "),
			path, newest, strings.Join(behind, ", "))
	}
}

// requiredVersions is the version of each module a go.mod requires, as
// its replace directives leave it (a module replaced by a directory is
// built from that directory, with no version to share, and is left out).
func requiredVersions(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", file))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := modfile.Parse(file, data, nil)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out := map[string]string{}
	for _, req := range mod.Require {
		out[req.Mod.Path] = req.Mod.Version
	}
	for _, rep := range mod.Replace {
		if _, required := out[rep.Old.Path]; !required || (rep.Old.Version != "" && rep.Old.Version != out[rep.Old.Path]) {
			continue
		}
		delete(out, rep.Old.Path)
		if rep.New.Version != "" {
			out[rep.New.Path] = rep.New.Version
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no requirement read", file)
	}
	return out
}

// repositoryGoMods lists every go.mod of the repository, relative to its
// root, leaving out what builds and tests write (dist/, testdata, hidden
// directories, and a checkout or worktree inside it: a directory with a
// .git of its own).
func repositoryGoMods(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("..", "..")
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while the walk ran: a test's scratch directory
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && rel != "." {
			if _, err := os.Lstat(filepath.Join(path, ".git")); err == nil ||
				strings.HasPrefix(d.Name(), ".") || rel == "dist" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
		}
		if !d.IsDir() && d.Name() == "go.mod" {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
