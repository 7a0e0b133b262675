package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readFile returns a repository file's text.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// shellDefault reads NAME=${NAME:-VALUE} from a script.
func shellDefault(t *testing.T, script, name string) string {
	t.Helper()
	m := regexp.MustCompile(name + `=\$\{` + name + `:-([^}]*)\}`).FindStringSubmatch(readFile(t, script))
	if m == nil {
		t.Fatalf("%s sets no default %s", script, name)
	}
	return m[1]
}

// The README's "Supported Karpenter versions" table, the chart's annotation
// and what the suites run are one list: the default version of
// test/world/testbin.sh and cluster.sh (every suite) and the matrix of
// test/world/suites.sh (its matrix:VERSION jobs: smoke and rotation), the default being go.mod's.
func TestSupportedKarpenterVersionsMatchWhatRuns(t *testing.T) {
	def := shellDefault(t, "../../test/world/testbin.sh", "KARPENTER_VERSION")
	if c := shellDefault(t, "../../test/world/cluster.sh", "KARPENTER_VERSION"); c != def {
		t.Errorf("cluster.sh runs Karpenter %s by default, testbin.sh builds %s", c, def)
	}
	if !strings.Contains(readFile(t, "../../go.mod"), "sigs.k8s.io/karpenter v"+def+"\n") {
		t.Errorf("the default Karpenter %s is not the one go.mod builds against", def)
	}
	matrix := strings.Fields(shellDefault(t, "../../test/world/suites.sh", "KARPENTER_MATRIX"))
	mk := regexp.MustCompile(`(?m)^KARPENTER_MATRIX \?= (.*)$`).FindStringSubmatch(readFile(t, "../../Makefile"))
	if mk == nil || !slices.Equal(strings.Fields(mk[1]), matrix) {
		t.Errorf("the Makefile's KARPENTER_MATRIX %v is not suites.sh's %v", mk, matrix)
	}
	ran := append([]string{def}, matrix...)
	slices.Sort(ran)

	var documented []string
	defaults := 0
	readme := readFile(t, "../../README.md")
	section := readme[strings.Index(readme, "## Supported Karpenter versions"):]
	section = section[:strings.Index(section[3:], "\n## ")+3]
	// the rows that pass: a version measured failing has a row of its own
	for _, m := range regexp.MustCompile(`(?m)^\| (\*\*)?v([0-9.]+)(\*\*)? .*\| passes \|$`).FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[2])
		if m[1] != "" {
			defaults++
			if m[2] != def {
				t.Errorf("the README marks v%s as the default; the suites run v%s", m[2], def)
			}
		}
	}
	slices.Sort(documented)
	if !slices.Equal(documented, ran) || defaults != 1 {
		t.Errorf("README lists %v (%d marked default), the suites run %v (default %s)", documented, defaults, ran, def)
	}

	ann := regexp.MustCompile(`noderotation.io/tested-karpenter-versions: "([^"]*)"`).FindStringSubmatch(readFile(t, "../../charts/node-rotation-controller/Chart.yaml"))
	if ann == nil {
		t.Fatal("Chart.yaml has no tested-karpenter-versions annotation")
	}
	chart := strings.Split(ann[1], ", ")
	if chart[0] != def {
		t.Errorf("Chart.yaml lists %s first, the default is %s", chart[0], def)
	}
	slices.Sort(chart)
	if !slices.Equal(chart, ran) {
		t.Errorf("Chart.yaml lists %v, the suites run %v", chart, ran)
	}
}

// The README's table is, line for line, what test/world/suites.sh prints
// after a run in which every job passed: the same rows, versions and
// wording (a failed run prints the same rows with its results, which then
// differ from the README's, as they should).
func TestREADMEVersionsTableIsWhatTheSuitesPrint(t *testing.T) {
	// the configured defaults, whatever this run's environment overrides
	cmd := exec.Command("bash", "../../test/world/suites.sh", "--versions-table")
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "KARPENTER_MATRIX", "K8S_VERSION", "SUITE_SLOT_BASE", "SUITE_CONCURRENCY", "TMPDIR", "NRC_SUITES_DIR":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("suites.sh --versions-table: %v", err)
	}
	readme := readFile(t, "../../README.md")
	const begin, end = "<!-- versions table: begin -->\n", "<!-- versions table: end -->"
	i, j := strings.Index(readme, begin), strings.Index(readme, end)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %q … %q block", begin, end)
	}
	got := strings.Split(strings.TrimSpace(readme[i+len(begin):j]), "\n")
	want := strings.Split(strings.TrimSpace(string(out)), "\n")
	if !slices.Equal(got, want) {
		t.Errorf("README.md's versions table is not what the suites print:\n--- README.md\n%s\n--- suites.sh --versions-table\n%s",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
