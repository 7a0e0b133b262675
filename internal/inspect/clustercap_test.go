package inspect

import (
	"context"
	"strings"
	"testing"
)

// With the controller's cap given, a pool held by it shows the gate
// clusterCap with what holds it and no end instant (it ends when another
// pool's rotation does); explain says the same.
func TestStatusOfAPoolHeldByTheClusterCap(t *testing.T) {
	in := inspector(t, scripted()...)
	in.MaxConcurrentRotations = 1 // busy, starting, overrun and lost are in flight
	st, err := in.Status(context.Background(), "ready")
	if err != nil {
		t.Fatal(err)
	}
	if st.Gate != "clusterCap" || !st.GateUntil.IsZero() || !strings.HasSuffix(st.GateWhy, "rotations in flight in other pools, the cap is 1") {
		t.Errorf("gate %q until %v why %q", st.Gate, st.GateUntil, st.GateWhy)
	}
	if cell := gateCell(st); cell != "clusterCap" {
		t.Errorf("GATE cell %q", cell)
	}
	ex, err := in.ExplainClaim(context.Background(), "ready-e")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ex.Reason, "the clusterCap gate holds the pool (") || strings.Contains(ex.Reason, "every gate open at") {
		t.Errorf("reason %q", ex.Reason)
	}
}
