package main

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
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

// supportedSection is README.md's "Supported versions" section.
func supportedSection(t *testing.T) string {
	t.Helper()
	readme := readFile(t, "../../README.md")
	i := strings.Index(readme, "## Supported versions")
	if i < 0 {
		t.Fatal(`README.md has no "## Supported versions" section`)
	}
	section := readme[i:]
	return section[:strings.Index(section[3:], "\n## ")+3]
}

// passingRows are the (Karpenter, Kubernetes, marked default) of the
// section's rows that pass: a version measured failing has a row of its own.
func passingRows(section string) [][3]string {
	var out [][3]string
	for _, m := range regexp.MustCompile(`(?m)^\| (\*\*)?v([0-9.]+)(\*\*)? [^|]*\| v([0-9.]+) .*\| passes \|$`).FindAllStringSubmatch(section, -1) {
		out = append(out, [3]string{m[2], m[4], m[1]})
	}
	return out
}

// matrixDefault reads a matrix variable of suites.sh and requires the
// Makefile's to be the same list.
func matrixDefault(t *testing.T, name string) []string {
	t.Helper()
	matrix := strings.Fields(shellDefault(t, "../../test/world/suites.sh", name))
	mk := regexp.MustCompile(`(?m)^` + name + ` \?= (.*)$`).FindStringSubmatch(readFile(t, "../../Makefile"))
	if mk == nil || !slices.Equal(strings.Fields(mk[1]), matrix) {
		t.Errorf("the Makefile's %s %v is not suites.sh's %v", name, mk, matrix)
	}
	return matrix
}

// The README's "Supported versions" table, the chart's annotation and what
// the suites run are one list of Karpenter versions: the default version of
// test/world/testbin.sh and cluster.sh (every suite) and the matrix of
// test/world/suites.sh (its matrix:VERSION jobs: smoke and rotation), the
// default being go.mod's, each on the shared control plane.
func TestSupportedKarpenterVersionsMatchWhatRuns(t *testing.T) {
	def := shellDefault(t, "../../test/world/testbin.sh", "KARPENTER_VERSION")
	shared := shellDefault(t, "../../test/world/testbin.sh", "K8S_VERSION")
	if c := shellDefault(t, "../../test/world/cluster.sh", "KARPENTER_VERSION"); c != def {
		t.Errorf("cluster.sh runs Karpenter %s by default, testbin.sh builds %s", c, def)
	}
	if !strings.Contains(readFile(t, "../../go.mod"), "sigs.k8s.io/karpenter v"+def+"\n") {
		t.Errorf("the default Karpenter %s is not the one go.mod builds against", def)
	}
	ran := append([]string{def}, matrixDefault(t, "KARPENTER_MATRIX")...)
	slices.Sort(ran)

	var documented []string
	defaults := 0
	for _, r := range passingRows(supportedSection(t)) {
		if r[1] != shared {
			continue // a Kubernetes matrix row
		}
		documented = append(documented, r[0])
		if r[2] != "" {
			defaults++
			if r[0] != def {
				t.Errorf("the README marks v%s as the default; the suites run v%s", r[0], def)
			}
		}
	}
	slices.Sort(documented)
	if !slices.Equal(documented, ran) || defaults != 1 {
		t.Errorf("README lists %v on Kubernetes v%s (%d marked default), the suites run %v (default %s)", documented, shared, defaults, ran, def)
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

// The Kubernetes versions the README lists are the shared control plane's
// (every suite) and suites.sh's KUBERNETES_MATRIX (kubernetes:VERSION jobs,
// on the default Karpenter), and the oldest of them is the chart's
// kubeVersion minimum: the chart installs on no Kubernetes older than CI
// ran.
func TestSupportedKubernetesVersionsMatchWhatRuns(t *testing.T) {
	def := shellDefault(t, "../../test/world/testbin.sh", "KARPENTER_VERSION")
	shared := shellDefault(t, "../../test/world/testbin.sh", "K8S_VERSION")
	ran := append([]string{shared}, matrixDefault(t, "KUBERNETES_MATRIX")...)
	slices.SortFunc(ran, compareVersions)

	var documented []string
	for _, r := range passingRows(supportedSection(t)) {
		switch {
		case r[2] != "": // the default row: every suite, on the shared control plane
			documented = append(documented, r[1])
		case r[1] == shared: // a Karpenter matrix row
		case r[0] == def:
			documented = append(documented, r[1])
		default:
			t.Errorf("README pairs Karpenter v%s with Kubernetes v%s: a Kubernetes matrix version runs only the default Karpenter, v%s", r[0], r[1], def)
		}
	}
	slices.SortFunc(documented, compareVersions)
	if !slices.Equal(documented, ran) {
		t.Errorf("README lists Kubernetes %v with Karpenter v%s, the suites run %v", documented, def, ran)
	}

	kv := regexp.MustCompile(`(?m)^kubeVersion: ">=([0-9]+\.[0-9]+)\.0-0"$`).FindStringSubmatch(readFile(t, "../../charts/node-rotation-controller/Chart.yaml"))
	if kv == nil {
		t.Fatal(`Chart.yaml has no kubeVersion ">=1.N.0-0"`)
	}
	if oldest := strings.Join(strings.Split(ran[0], ".")[:2], "."); kv[1] != oldest {
		t.Errorf("the chart's kubeVersion minimum is %s, the oldest Kubernetes the suites run is %s", kv[1], ran[0])
	}
}

// compareVersions orders dotted release numbers numerically.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x - y
		}
	}
	return len(as) - len(bs)
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
		case "KARPENTER_MATRIX", "KUBERNETES_MATRIX", "K8S_VERSION", "SUITE_SLOT_BASE", "SUITE_CONCURRENCY", "TMPDIR", "NRC_SUITES_DIR", "NRC_PROVEN_FILE":
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
