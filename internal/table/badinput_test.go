package table_test

import (
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/table"
)

// poolTimestamps are the pool's timestamp annotations the facts parse,
// each with a setter.
var poolTimestamps = map[string]func(*engine.Snapshot, string){
	"noderotation.io/freeze":           func(s *engine.Snapshot, v string) { s.Pool.Freeze = v },
	"noderotation.io/last-rotation-at": func(s *engine.Snapshot, v string) { s.Pool.LastRotationAt = v },
	"noderotation.io/last-failure-at":  func(s *engine.Snapshot, v string) { s.Pool.LastFailureAt = v },
	"noderotation.io/window-opened-at": func(s *engine.Snapshot, v string) { s.Pool.WindowOpenedAt = v },
}

// The rollback paths of an anchored rotation — governance lost, a
// force-expiry, the ready timeout — never depend on a pool timestamp that
// is not theirs: with any one of them garbled, every such snapshot decides
// the same transition as with it well-formed, and the rotation machine is
// never undecided (docs/design.md#bad-input).
func TestRollbacksNeverDependOnAPoolTimestamp(t *testing.T) {
	e, err := table.Load()
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]bool{}
	for _, s := range rollbackSnapshots() {
		want := rotation(e.Decide(&s))
		if want.Undecided != nil {
			t.Fatalf("the well-formed snapshot is undecided: %v\n%+v", want.Undecided, s)
		}
		for key, set := range poolTimestamps {
			bad := s
			set(&bad, "soon")
			got := rotation(e.Decide(&bad))
			if got.Undecided != nil || got.Transition != want.Transition {
				t.Errorf("%s garbled: %s (%v), want %s; snapshot %+v", key, got.Transition, got.Undecided, want.Transition, bad)
			}
		}
		checked[want.Transition] = true
	}
	for _, id := range []string{"pending.governance-lost", "draining.governance-lost", "draining.governance-lost-hold", "failed.governance-lost",
		"gone.governance-lost", "invalid.governance-lost", "invalid.governance-lost-hold", "pending.force-expiry", "failed.force-expiry", "pending.ready-timeout"} {
		if !checked[id] {
			t.Errorf("no snapshot took %s", id)
		}
	}
}

func rotation(ds []engine.Decision) engine.Decision {
	for _, d := range ds {
		if d.Machine == "rotation" {
			return d
		}
	}
	panic("no rotation machine")
}

// rollbackSnapshots: an anchored claim in every state of a rotation, with
// its placeholder and pairing present or not, on a pool that lost its
// policy (each way of not being governed), that Karpenter is expiring, or
// whose ready timeout has run out.
func rollbackSnapshots() []engine.Snapshot {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	base := func() engine.Snapshot {
		return engine.Snapshot{
			Now: now, Candidate: "none",
			Pool: engine.PoolObservation{Governance: "governed", Feasible: true, WindowOpen: true, Anchor: "general-a", RotationState: "pending",
				Freeze: now.Add(-time.Hour).Format(time.RFC3339), LastRotationAt: now.Add(-2 * time.Hour).Format(time.RFC3339),
				LastFailureAt: now.Add(-3 * time.Hour).Format(time.RFC3339), WindowOpenedAt: now.Add(-4 * time.Hour).Format(time.RFC3339)},
			Policy: engine.PolicyObservation{ReadyTimeout: engine.Duration(15 * time.Minute), CooldownAfter: engine.Duration(10 * time.Minute),
				FailurePause: engine.Duration(10 * time.Minute), DrainBound: engine.Duration(time.Hour)},
			Claim: engine.ClaimObservation{Exists: true, StartedAt: now.Add(-5 * time.Minute).Format(time.RFC3339)},
			Surge: engine.SurgeObservation{Headroom: true},
		}
	}
	var out []engine.Snapshot
	for _, state := range []string{"", "pending", "draining", "failed", "half-done", "gone"} {
		for _, placeholder := range []bool{false, true} {
			s := base()
			s.Claim.State, s.Surge.PlaceholderExists, s.Surge.PairedNodes = state, placeholder, placeholder
			if state == "draining" {
				s.Pool.RotationState = "draining"
			}
			if state == "failed" {
				s.Claim.FailedAt, s.Claim.RetryCount, s.Claim.RetryAt = now.Add(-time.Minute).Format(time.RFC3339), "1", now.Add(time.Hour)
			}
			if state == "gone" {
				s.Claim = engine.ClaimObservation{}
			}
			for _, gov := range []string{"ungoverned", "conflict", "invalid"} {
				lost := s
				lost.Pool.Governance = gov
				out = append(out, lost)
				if state != "gone" {
					deleting := lost
					deleting.Claim.Deleting, deleting.Claim.DeletedAt = true, now.Add(-time.Minute)
					out = append(out, deleting)
				}
			}
			if state == "" || state == "pending" || state == "failed" {
				expiring := s
				expiring.Claim.Deleting, expiring.Claim.DeletedAt = true, now.Add(-time.Minute)
				out = append(out, expiring)
			}
			if state == "" || state == "pending" {
				timedOut := s
				timedOut.Claim.StartedAt = now.Add(-time.Hour).Format(time.RFC3339)
				out = append(out, timedOut)
			}
		}
	}
	return out
}
