package layering_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/noderotation/node-rotation-controller"

// allowed lists, for every production package, the packages of this module
// it may import directly. A package missing here, or an import missing from
// its list, fails the test: a new arrow is a decision to write down here
// and in docs/architecture.md.
var allowed = map[string][]string{
	"api/v1alpha1":                 {},
	"engine":                       {},
	"rules":                        {},
	"internal":                     {},
	"internal/conditional":         {},
	"internal/cache":               {"api/v1alpha1"},
	"internal/golden":              {},
	"internal/preflight":           {},
	"internal/version":             {},
	"internal/schedule":            {},
	"internal/budget":              {},
	"internal/scheme":              {"api/v1alpha1"},
	"internal/surge":               {"api/v1alpha1"},
	"internal/prepull":             {"api/v1alpha1", "internal/surge"},
	"internal/markers":             {"api/v1alpha1"},
	"internal/policy":              {"api/v1alpha1", "internal/budget", "internal/schedule"},
	"internal/plan":                {"api/v1alpha1", "internal/admission", "internal/budget", "internal/policy", "internal/schedule"},
	"internal/admission":           {"config/crd"},
	"config/crd":                   {},
	"internal/metrics":             {"engine", "internal/schedule"},
	"internal/census":              {"api/v1alpha1", "engine", "internal/policy", "internal/schedule"},
	"actions":                      {"api/v1alpha1", "engine", "internal/conditional", "internal/markers"},
	"internal/sweep":               {"api/v1alpha1", "internal/conditional", "internal/markers"},
	"internal/table":               {"actions", "engine", "internal/census", "rules"},
	"internal/observe":             {"api/v1alpha1", "engine", "internal/budget", "internal/census", "internal/markers", "internal/policy", "internal/prepull", "internal/schedule", "internal/surge"},
	"internal/announce":            {"actions", "api/v1alpha1", "engine", "internal/budget", "internal/census", "internal/metrics", "internal/policy", "internal/prepull", "internal/schedule", "internal/surge"},
	"internal/controller":          {"actions", "api/v1alpha1", "engine", "internal/announce", "internal/budget", "internal/metrics", "internal/observe", "internal/policy", "internal/prepull", "internal/schedule", "internal/surge", "internal/sweep", "internal/table"},
	"cmd/node-rotation-controller": {"internal/cache", "internal/controller", "internal/preflight", "internal/prepull", "internal/scheme", "internal/surge", "internal/version"},
	"internal/inspect":             {"api/v1alpha1", "engine", "internal/budget", "internal/census", "internal/observe", "internal/prepull", "internal/schedule"},
	"internal/inspect/inspecttest": {"api/v1alpha1"},
	"internal/simulate":            {"api/v1alpha1", "engine", "internal/budget", "internal/controller", "internal/observe", "internal/plan", "internal/policy", "internal/schedule", "internal/scheme", "internal/table"},
	"cmd/rotationctl":              {"api/v1alpha1", "engine", "internal/cache", "internal/controller", "internal/inspect", "internal/plan", "internal/schedule", "internal/scheme", "internal/simulate", "internal/table", "internal/version", "rules"},
}

// forbidden are the arrows the one-way pass rules out, checked over every
// transitive dependency (`go list -deps`), so no detour through another
// package can bring them back.
var forbidden = map[string][]string{
	"engine":               {"*"}, // cel-go and yaml only: nothing of this domain
	"rules":                {"*"}, // data: the table and its golden cases
	"internal/conditional": {"*"},
	"internal/cache":       {"actions", "engine", "internal/observe", "internal/census", "internal/announce", "internal/controller", "internal/table", "rules"}, // the informer cache's shape: client-go, controller-runtime and Karpenter's types
	"internal/markers":     {"actions", "internal/observe", "internal/census", "internal/sweep", "internal/controller", "internal/conditional"},
	"actions":              {"internal/observe", "internal/census", "internal/surge", "internal/announce", "internal/metrics", "internal/controller", "internal/sweep", "internal/table", "rules"},
	"internal/metrics":     {"internal/observe", "internal/census", "actions", "internal/announce"},
	"internal/sweep":       {"actions", "internal/observe", "internal/announce", "internal/controller"},
	"internal/observe":     {"actions", "internal/announce", "internal/metrics", "internal/controller", "internal/table", "rules"},
	"internal/census":      {"internal/observe", "actions", "internal/announce", "internal/controller"},
	"internal/budget":      {"*"},                                                                           // Karpenter's budget rule and the pool's count: nothing of this controller's
	"internal/announce":    {"internal/observe", "internal/controller", "internal/table", "internal/sweep"}, // it reads a View the reconciler cuts
}

// testOnly must never reach a binary.
var testOnly = []string{
	"github.com/onsi/ginkgo", "github.com/onsi/gomega",
	"sigs.k8s.io/controller-runtime/pkg/envtest", "sigs.k8s.io/controller-runtime/pkg/client/fake",
	"helm.sh/helm", "github.com/prometheus/prometheus", // the chart tests' Helm SDK, the PromQL tests' parser
	"k8s.io/pod-security-admission", // the pre-pull Pod's restricted-profile test
	module + "/test/", module + "/internal/golden", module + "/internal/inspect/inspecttest",
}

// goList runs `go list` from the module root with a template over packages.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

func local(path string) (string, bool) {
	if path == module {
		return "", true
	}
	rest, ok := strings.CutPrefix(path, module+"/")
	return rest, ok
}

func TestDirectImportsAreAllowed(t *testing.T) {
	for _, line := range goList(t, "-f", `{{.ImportPath}}|{{join .Imports ","}}`, "./...") {
		pkg, imports, _ := strings.Cut(line, "|")
		name, _ := local(pkg)
		if strings.HasPrefix(name, "test/") {
			continue // the suites may reach anything they test
		}
		list, known := allowed[name]
		if !known {
			t.Errorf("package %s is not in the layering table: add it with the imports it may have", name)
			continue
		}
		for _, imp := range strings.Split(imports, ",") {
			if dep, ok := local(imp); ok && !slices.Contains(list, dep) {
				t.Errorf("%s imports %s: not an allowed arrow", name, dep)
			}
		}
	}
}

func TestForbiddenArrowsAreAbsentTransitively(t *testing.T) {
	for pkg, bad := range forbidden {
		for _, dep := range goList(t, "-deps", "./"+pkg) {
			name, ok := local(dep)
			if !ok || name == pkg {
				continue
			}
			if slices.Contains(bad, "*") || slices.Contains(bad, name) {
				t.Errorf("%s depends on %s", pkg, name)
			}
		}
	}
}

// inMemoryAPI is controller-runtime's fake client: test-only for the
// controller, but the in-memory API server `rotationctl simulate` runs the
// reconciler on (issue #14 names it), so rotationctl may link it.
const inMemoryAPI = "sigs.k8s.io/controller-runtime/pkg/client/fake"

func TestBinariesCarryNoTestDependency(t *testing.T) {
	for _, bin := range []string{"./cmd/node-rotation-controller", "./cmd/rotationctl"} {
		for _, dep := range goList(t, "-deps", bin) {
			if bin == "./cmd/rotationctl" && dep == inMemoryAPI {
				continue
			}
			for _, bad := range testOnly {
				if strings.HasPrefix(dep, bad) {
					t.Errorf("%s links %s, a test-only package", bin, dep)
				}
			}
		}
	}
}

// cliOnly are what rotationctl links to be a kubectl plugin (kubectl's
// connection flags and printers): the controller, which runs in every
// cluster, must not carry them.
var cliOnly = []string{"k8s.io/cli-runtime", "sigs.k8s.io/kustomize"}

func TestTheControllerCarriesNoCLILibrary(t *testing.T) {
	for _, dep := range goList(t, "-deps", "./cmd/node-rotation-controller") {
		for _, bad := range cliOnly {
			if strings.HasPrefix(dep, bad) {
				t.Errorf("the controller links %s, which only rotationctl needs", dep)
			}
		}
	}
}

// engineModules are the only modules package engine may link: cel-go (with
// what it brings) and a YAML parser — nothing of Kubernetes, Karpenter or
// this project's domain.
var engineModules = []string{
	"cel.dev/expr", "github.com/google/cel-go", "github.com/antlr4-go/antlr", "github.com/stoewer/go-strcase",
	"golang.org/x/exp", "golang.org/x/text", "google.golang.org/protobuf", "google.golang.org/genproto", "go.yaml.in/yaml",
}

func TestEngineLinksOnlyCelAndYAML(t *testing.T) {
	for _, dep := range goList(t, "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./engine") {
		if _, ok := local(dep); ok {
			continue
		}
		known := false
		for _, m := range engineModules {
			known = known || strings.HasPrefix(dep, m)
		}
		if !known {
			t.Errorf("engine links %s: the engine knows nothing of this domain (cel-go and yaml only)", dep)
		}
	}
}
