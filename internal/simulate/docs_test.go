package simulate

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// docs/policy.md shows the run of docs/examples/fleets/examples.yaml under
// every policy of docs/examples: the shown summary must be
// what the simulator prints today, so a change to the controller or the
// simulator that moves a figure updates the docs with it.
func TestPolicyDocsShowTheExampleRun(t *testing.T) {
	f, err := LoadFleet("../../docs/examples/fleets/examples.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, f, loadPolicies(t, "api-policy.yaml", "always-open.yaml", "eks-auto-mode.yaml", "several-pools.yaml"), 1)
	var out bytes.Buffer
	if err := RenderSummary(&out, r); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), out.String()) {
		t.Errorf("docs/policy.md#simulating-a-policy no longer shows the run; today it prints:\n%s", out.String())
	}
}
