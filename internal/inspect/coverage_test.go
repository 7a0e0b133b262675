package inspect

import (
	"bytes"
	"strings"
	"testing"

	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// A governed pool its policy cannot cover says so in the POLICY column,
// and explain gives the verdict in words with its remedy.
func TestUncoveredPoolIsShown(t *testing.T) {
	c := &schedule.Coverage{Applies: true, Reason: "ThroughputBelowArrival", Nodes: 300, Arrival: 54.7, Capacity: 10, InForce: 1, Needed: 6}
	st := &PoolStatus{NodePool: "big", Governance: governed, Policy: "fleet", Feasible: true, Coverage: c}
	if got := policyCell(st); got != "fleet (uncovered)" {
		t.Errorf("policy cell %q", got)
	}
	var out bytes.Buffer
	if err := RenderPool(&out, &PoolExplanation{Status: st}, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Coverage           not covered: 300 nodes need 54.7 rotations per occurrence (N·P/A), and 10 fit (C at maxUnavailable 1); maxUnavailable 6 would cover it") {
		t.Errorf("explain:\n%s", out.String())
	}
	c.Covered = true
	if got := policyCell(st); got != "fleet" {
		t.Errorf("covered: policy cell %q", got)
	}
}
