package world

import (
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
// 2026-12-05 their differing versions had a cold run compile 2,486
// packages where 1,451 do (docs/test-world.md, "CI time"). A module
// raised in one go.mod is raised in the others with `go get PATH@VERSION`.
func TestTheRepositorysModulesRequireOneVersionOfEachModule(t *testing.T) {
	versions := map[string]map[string][]string{} // module path → version → go.mod files
	for _, file := range repositoryGoMods(t) {
		data, err := os.ReadFile(filepath.Join("..", "..", file))
		if err != nil {
			t.Fatal(err)
		}
		mod, err := modfile.ParseLax(file, data, nil)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, req := range mod.Require {
			if versions[req.Mod.Path] == nil {
				versions[req.Mod.Path] = map[string][]string{}
			}
			versions[req.Mod.Path][req.Mod.Version] = append(versions[req.Mod.Path][req.Mod.Version], file)
		}
	}
	if len(versions) == 0 {
		t.Fatal("no requirement read from the repository's go.mod files")
	}
	for _, path := range slices.Sorted(maps.Keys(versions)) {
		byVersion := versions[path]
		if len(byVersion) == 1 {
			continue
		}
		listed := slices.SortedFunc(maps.Keys(byVersion), semver.Compare)
		var where []string
		for _, v := range listed {
			where = append(where, v+" in "+strings.Join(byVersion[v], ", "))
		}
		t.Errorf("%s: %s; raise the others to %s (go get %s@%s)", path, strings.Join(where, "; "),
			listed[len(listed)-1], path, listed[len(listed)-1])
	}
}

// repositoryGoMods lists every go.mod of the repository, relative to its
// root, leaving out what builds write (dist/) and hidden directories.
func repositoryGoMods(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("..", "..")
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "dist" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "go.mod" {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("found %v: the walk from the repository's root found too few go.mod files", files)
	}
	return files
}
