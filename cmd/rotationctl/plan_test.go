package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/internal/plan"
	"github.com/noderotation/node-rotation-controller/rules"
)

const example = "../../docs/examples/api-policy.yaml"
const now = "--now=2026-11-30T12:00:00Z"

func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestPlanWorkedExample(t *testing.T) {
	code, out, errOut := runCLI("plan", "-f", example, "--expire-after", "14d", "--tgp", "1h", now)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	for _, want := range []string{"4d", "1h17m", "5d22h43m", "15m", "Wed 2026-12-02 02:00 – 06:00 JST (Asia/Tokyo)", "Findings:\n  none"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestPlanJSONFromNodePool(t *testing.T) {
	code, out, errOut := runCLI("plan", "-f", example, "--nodepool", "testdata/nodepool.yaml", "-o", "json", now)
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var r plan.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.NodePool != "api" || r.ExpireAfter != "14d" || r.TerminationGracePeriod != "1h" ||
		r.P != "4d" || r.TRot != "1h17m" || r.A != "5d22h43m" || r.TRotEst != "15m" || r.C != 10 || r.G != 2 || len(r.NextOccurrences) != 3 {
		t.Errorf("report = %+v", r)
	}
}

func TestPlanFlagsOverrideNodePool(t *testing.T) {
	code, out, _ := runCLI("plan", "-f", example, "--nodepool", "testdata/nodepool.yaml", "--tgp", "24h", "-o", "json", now)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var r plan.Report
	_ = json.Unmarshal([]byte(out), &r)
	if r.TRot != "1d17m" || r.TerminationGracePeriod != "1d" {
		t.Errorf("t_rot = %s, tGP = %s", r.TRot, r.TerminationGracePeriod)
	}
}

func TestPlanFatalExitsOne(t *testing.T) {
	code, out, _ := runCLI("plan", "-f", "testdata/saturday-only.yaml", "--expire-after", "14d", "--tgp", "1h", now)
	if code != exitFatal || !strings.Contains(out, "Fatal") || !strings.Contains(out, "AgeThresholdNotPositive") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

func TestPlanThroughputFindings(t *testing.T) {
	_, out, _ := runCLI("plan", "-f", example, "--expire-after", "14d", "--tgp", "1h", "--nodes", "40", now)
	if !strings.Contains(out, "ThroughputBelowArrival") || !strings.Contains(out, "ThroughputBurstShortfall") {
		t.Errorf("output:\n%s", out)
	}
	_, out, _ = runCLI("plan", "-f", example, "--expire-after", "14d", "--tgp", "1h", "--nodes", "12", "--burst", "0", now)
	if strings.Contains(out, "Throughput") {
		t.Errorf("12 spread nodes should fit C = 10:\n%s", out)
	}
}

func TestPlanBadInputExitsTwoWithOneLine(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"plan", "-f", "testdata/bad-duration.yaml", "--expire-after", "14d"}, `testdata/bad-duration.yaml: document 1: RotationPolicy.noderotation.io "bad" is invalid: spec.surge.readyTimeout: Invalid value: "fifteen minutes": readyTimeout must be a Go duration such as 90m`},
		{[]string{"plan", "-f", "testdata/unknown-field.yaml", "--expire-after", "14d"}, `testdata/unknown-field.yaml: document 1: strict decoding error: unknown field "spec.maintenanceWindow"`},
		{[]string{"plan", "-f", "testdata/missing.yaml", "--expire-after", "14d"}, "testdata/missing.yaml: no such file or directory"},
		{[]string{"plan", "-f", example}, "expireAfter is unknown"},
		{[]string{"plan", "-f", example, "--expire-after", "two weeks"}, `--expire-after "two weeks"`},
		{[]string{"plan", "-f", example, "--expire-after", "14d", "-o", "xml"}, `-o "xml"`},
		{[]string{"plan", "-f", example, "--expire-after", "14d", "--now", "tomorrow"}, `--now "tomorrow"`},
		{[]string{"plan", "-f", "../../docs/examples/several-pools.yaml", "--expire-after", "14d"}, "3 RotationPolicies in the file; choose one with --policy NAME"},
		{[]string{"plan", "--kubeconfig", "testdata/no-such-kubeconfig"}, "loading kubeconfig"},
		{[]string{"plan", "--bogus"}, "unknown flag: --bogus"},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(c.args...)
		if code != exitBadInput || out != "" || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and one line containing %q", c.args, code, out, errOut, c.want)
		}
	}
}

func TestPlanPicksPolicyByName(t *testing.T) {
	code, out, errOut := runCLI("plan", "-f", "../../docs/examples/several-pools.yaml", "--policy", "payments", "--expire-after", "21d", "--tgp", "1h", now)
	if code != 0 || !strings.Contains(out, "RotationPolicy payments") {
		t.Errorf("exit %d stderr %s out:\n%s", code, errOut, out)
	}
}

func TestRulesLintShippedTable(t *testing.T) {
	code, out, errOut := runCLI("rules", "lint")
	if code != 0 || !strings.Contains(out, "is complete, deterministic and live") {
		t.Errorf("exit %d stdout %q stderr %q", code, out, errOut)
	}
}

func TestRulesLintBrokenTableExitsOne(t *testing.T) {
	broken := t.TempDir() + "/broken.yaml"
	data := strings.Replace(string(rules.Table), `guard: windowStamped && attemptInFlight`, `guard: windowStamped`, 1)
	if err := os.WriteFile(broken, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI("rules", "lint", broken)
	if code != exitFatal || !strings.Contains(errOut, `transitions "window.closed.in-flight"`) || !strings.Contains(errOut, "(not deterministic)") {
		t.Errorf("exit %d stderr %q", code, errOut)
	}
	code, _, errOut = runCLI("rules", "lint", t.TempDir()+"/missing.yaml")
	if code != exitBadInput || !strings.Contains(errOut, "no such file") {
		t.Errorf("missing file: exit %d stderr %q", code, errOut)
	}
}

func TestRulesRenderAndExpand(t *testing.T) {
	code, out, _ := runCLI("rules", "render")
	if code != 0 || !strings.Contains(out, "stateDiagram-v2") || !strings.Contains(out, "| `pending.surge-ready` |") {
		t.Errorf("render: exit %d, output starts %q", code, out[:min(len(out), 200)])
	}
	code, out, _ = runCLI("rules", "expand")
	if code != 0 || !strings.Contains(out, "-> idle.start\n") || strings.Count(out, "\n") < 1000 {
		t.Errorf("expand: exit %d, %d lines", code, strings.Count(out, "\n"))
	}
}

// The 300-node pool: plan prints the verdict with the smallest N
// that covers it; only --fail-on warning fails the run for it.
func TestPlanCoverageAndFailOn(t *testing.T) {
	args := []string{"plan", "-f", "testdata/uncovered-300.yaml", "--expire-after", "720h", "--nodes", "300", now}
	code, out, _ := runCLI(args...)
	if code != 0 || !strings.Contains(out, "not covered: 300 nodes need") || !strings.Contains(out, "maxUnavailable 6") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
	if code, _, _ := runCLI(append(args, "--fail-on", "warning")...); code != exitFatal {
		t.Errorf("--fail-on warning: exit %d, want %d", code, exitFatal)
	}
	// six at once covers it: nothing to fail on
	for _, surge := range []string{"  surge: {maxUnavailable: 6}\n", ""} {
		// six at once, or the default, auto, which picks six
		path := filepath.Join(t.TempDir(), "six.yaml")
		if err := os.WriteFile(path, []byte(strings.Replace(mustRead(t, "testdata/uncovered-300.yaml"), "  surge: {maxUnavailable: 1}\n", surge, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, out, _ := runCLI("plan", "-f", path, "--expire-after", "720h", "--nodes", "300", "--fail-on", "warning", now); code != 0 ||
			!strings.Contains(out, "covered: 300 nodes") || !strings.Contains(out, "6 (") {
			t.Errorf("%q: exit %d, output:\n%s", surge, code, out)
		}
	}
	if code, _, errOut := runCLI(append(args, "--fail-on", "error")...); code != exitBadInput || !strings.Contains(errOut, `--fail-on "error"`) {
		t.Errorf("--fail-on error: exit %d, %s", code, errOut)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// The flags that plan a policy file need -f: without it, plan judges the
// live cluster, and says so rather than ignore them.
func TestLivePlanRefusesFileFlags(t *testing.T) {
	code, _, errOut := runCLI("plan", "--nodes", "300", "--kubeconfig", "testdata/no-such-kubeconfig")
	if code != exitBadInput || !strings.Contains(errOut, "--nodes plans a policy file: give -f policy.yaml") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

// The NodePool's budgets bound the forecast (docs/design.md#budget-forecast):
// a budget allowing fewer than auto needs holds N and names itself as the
// remedy; a zero budget over part of each window shortens it; one over
// every window leaves nothing to rotate in.
func TestPlanReadsTheNodePoolBudgets(t *testing.T) {
	auto := filepath.Join(t.TempDir(), "auto.yaml")
	if err := os.WriteFile(auto, []byte(strings.Replace(mustRead(t, "testdata/uncovered-300.yaml"), "  surge: {maxUnavailable: 1}\n", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, budgets string
		code          int
		want          []string
	}{
		{name: "Karpenter's default, 10%, leaves auto its 6", budgets: "", code: 0,
			want: []string{"nodes=10%\n", "covered: 300 nodes need 54.7 rotations per occurrence (N·P/A), and 60 fit (C at maxUnavailable 6)"}},
		{name: "1% holds N at 3", budgets: `budgets: [{nodes: "1%"}]`, code: exitFatal,
			want: []string{"C at maxUnavailable 3, held by NodePool budget nodes=1%", "a NodePool budget that allows 6, ", "6 (auto: 6, the smallest that covers 300 nodes (maxUnavailableCap 10% of 300 nodes allows 30)); NodePool budget nodes=1% allows 3 in the windows"}},
		{name: "a zero budget over each window's last two hours", budgets: `budgets: [{nodes: "0", schedule: "0 4 * * *", duration: 2h}]`, code: 0,
			want: []string{"; the windows less NodePool budget nodes=0 (schedule \"0 4 * * *\" for 2h)", "C at maxUnavailable 11;"}},
		{name: "business hours 0 over every window", budgets: `budgets: [{nodes: "5%"}, {nodes: "0", schedule: "0 1 * * *", duration: 8h}]`, code: exitFatal,
			want: []string{"not covered: NodePool budget nodes=0 (schedule \"0 1 * * *\" for 8h) allows no disruption in any window occurrence"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			np := "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: big}\nspec:\n  template: {spec: {expireAfter: 720h}}\n"
			if c.budgets != "" {
				np += "  disruption:\n    " + c.budgets + "\n"
			}
			path := filepath.Join(t.TempDir(), "np.yaml")
			if err := os.WriteFile(path, []byte(np), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runCLI("plan", "-f", auto, "--nodepool", path, "--nodes", "300", "--fail-on", "warning", now)
			if code != c.code {
				t.Errorf("exit %d, want %d: %s", code, c.code, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("no %q in:\n%s", w, out)
				}
			}
		})
	}
}
