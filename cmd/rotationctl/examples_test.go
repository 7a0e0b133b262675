package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/noderotation/node-rotation-controller/internal/plan"
)

// Every policy of docs/examples names, in its file's header, the plan run
// that sizes it — `rotationctl plan … --nodes N --fail-on warning` — and
// that run passes: no finding, every node covered (docs/policy.md#examples).
func TestExamplesFitThePoolsTheirHeadersName(t *testing.T) {
	files, err := filepath.Glob("../../docs/examples/*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("examples %v, %v", files, err)
	}
	for _, f := range files {
		policies, err := plan.LoadPolicies(f)
		if err != nil {
			t.Fatal(err)
		}
		sized := map[string]bool{}
		for _, line := range strings.Split(mustRead(t, f), "\n") {
			cmd, ok := strings.CutPrefix(line, "#   rotationctl plan ")
			if !ok {
				continue
			}
			args := strings.Fields(cmd)
			if !slices.Contains(args, "--nodes") || !slices.Contains(args, "--fail-on") || args[slices.Index(args, "--fail-on")+1] != "warning" {
				t.Errorf("%s: %q does not size a pool with --nodes and --fail-on warning", f, line)
			}
			for i, a := range args {
				if a == "-f" {
					args[i+1] = "../../" + args[i+1]
				}
			}
			name := policies[0].Name
			if i := slices.Index(args, "--policy"); i >= 0 {
				name = args[i+1]
			}
			sized[name] = true
			if code, out, errOut := runCLI(append([]string{"plan"}, append(args, now)...)...); code != 0 {
				t.Errorf("%s: %q exits %d:\n%s%s", filepath.Base(f), line, code, out, errOut)
			}
		}
		for _, p := range policies {
			if !sized[p.Name] {
				t.Errorf("%s: policy %s has no `#   rotationctl plan … --nodes N --fail-on warning` line in the header", filepath.Base(f), p.Name)
			}
		}
	}
}
