package engine_test

import (
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/table"
)

// A pending claim waiting for its surge: the busiest state. Decide consults
// nine facts across both machines (as docs/performance.md says): the state
// and six guard facts of the rotation machine (claimDeleting, governance,
// readyTimeoutElapsed, frozen, placeholderExists, surgeReady), and the
// window machine's windowState and windowStamped.
func pendingSnapshot() *engine.Snapshot {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &engine.Snapshot{
		Now:    now,
		Pool:   engine.PoolObservation{Governance: "governed", Feasible: true, WindowOpen: true, Anchor: "general-abcde", WindowOpenedAt: "2026-11-30T11:00:00Z"},
		Policy: engine.PolicyObservation{ReadyTimeout: engine.Duration(15 * time.Minute), CooldownAfter: engine.Duration(10 * time.Minute), FailurePause: engine.Duration(10 * time.Minute), DrainBound: engine.Duration(62 * time.Minute)},
		Claim:  engine.ClaimObservation{Exists: true, State: "pending", StartedAt: "2026-11-30T11:55:00Z"},
		Surge:  engine.SurgeObservation{PlaceholderExists: true, Headroom: true},
	}
}

func BenchmarkDecide(b *testing.B) {
	e, err := table.Load()
	if err != nil {
		b.Fatal(err)
	}
	s := pendingSnapshot()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ds := e.Decide(s); ds[0].Transition != "pending.await-surge" {
			b.Fatalf("%+v", ds)
		}
	}
}

func BenchmarkDecideIdle(b *testing.B) {
	e, err := table.Load()
	if err != nil {
		b.Fatal(err)
	}
	s := pendingSnapshot()
	s.Pool.Anchor, s.Claim, s.Candidate = "", engine.ClaimObservation{}, "surge"
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ds := e.Decide(s); ds[0].Transition != "idle.start" {
			b.Fatalf("%+v", ds)
		}
	}
}

func BenchmarkLoadAndProve(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := table.Load(); err != nil {
			b.Fatal(err)
		}
	}
}

// The tree walk fills the shipped table's lookup exactly as evaluating
// every guard on every combination does.
func TestShippedTableProofMatchesFullEnumeration(t *testing.T) {
	e, err := table.Load()
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.CheckByEnumeration(e); err != nil {
		t.Fatal(err)
	}
}
