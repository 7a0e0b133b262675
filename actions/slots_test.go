package actions

import (
	"slices"
	"testing"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
)

// A start in slot 2 writes slot 2's keys only, and only while the pool has
// fewer rotations anchored than it may have in flight
// (docs/design.md#throughput).
func TestAnchorWriteInASlot(t *testing.T) {
	s2 := v1alpha1.Slot(2).Key
	for _, tc := range []struct {
		name    string
		pool    map[string]string
		inForce int
		want    Outcome
	}{
		{"a free slot below the number in force", ann(keyAnchor, "claim-x", keyMirror, "draining"), 2, Claimed},
		{"no bound (0) is no check", ann(keyAnchor, "claim-x"), 0, Claimed},
		{"as many anchored as may be in flight", ann(keyAnchor, "claim-x", v1alpha1.Slot(3).Key(keyAnchor), "claim-y"), 2, Raced},
		{"the slot itself is taken", ann(s2(keyAnchor), "claim-y"), 3, Raced},
		{"the claim is anchored in another slot", ann(keyAnchor, claimA), 3, Raced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mkPool(poolName, tc.pool))
			targets := e.targets()
			targets.Slot, targets.InForce = 2, tc.inForce
			res, err := step(e.pass(targets), "anchor-write", map[string]any{"mode": "surge"})
			if err != nil || res.Outcome != tc.want {
				t.Fatalf("outcome %s %v, want %s", res.Outcome, err, tc.want)
			}
			got := e.pool(poolName).Annotations
			if tc.want == Claimed {
				wantAnn(t, "pool", got, ann(s2(keyAnchor), claimA, s2(keyMirror), "pending"))
			}
			for k, v := range tc.pool {
				if got[k] != v {
					t.Errorf("the start in slot 2 changed %s from %q to %q", k, v, got[k])
				}
			}
		})
	}
}

// A release in slot 2 reads and clears slot 2's set and stamps slot 2's
// last success; slot 1's rotation and last success stay.
func TestAnchorReleaseInASlot(t *testing.T) {
	s2 := v1alpha1.Slot(2).Key
	e := newEnv(t, mkPool(poolName, ann(
		keyAnchor, "claim-x", keyMirror, "pending", keyLastRot, "2026-11-01T00:00:00Z",
		s2(keyAnchor), claimA, s2(keyMirror), "draining", s2(keyDraining), "2026-11-30T09:00:00Z", s2(keySurgeWait), "4m0s")))
	targets := e.targets()
	targets.Slot = 2
	res, err := step(e.pass(targets), "anchor-release", nil)
	if err != nil || res.Outcome != Claimed || res.Released == nil || res.Released.Outcome != ReleasedSuccess {
		t.Fatalf("release = %+v %v, want a success", res, err)
	}
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(
		keyAnchor, "claim-x", keyMirror, "pending", keyLastRot, "2026-11-01T00:00:00Z",
		s2(keyAnchor), "", s2(keyMirror), "", s2(keyDraining), "", s2(keySurgeWait), "", s2(keyLastRot), nowStamp))
}

// A re-adoption never makes one rotation more than the number in force,
// and never anchors a claim another slot names.
func TestReadoptInASlot(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pool    map[string]string
		inForce int
		want    Outcome
	}{
		{"a free slot", ann(keyAnchor, "claim-x"), 2, Claimed},
		{"the pool is full", ann(keyAnchor, "claim-x", v1alpha1.Slot(3).Key(keyAnchor), "claim-y"), 2, Raced},
		{"another slot names it", ann(keyAnchor, claimA), 3, Raced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mkPool(poolName, tc.pool), mkClaim(claimA, ann(keyState, "pending")))
			targets := e.targets()
			targets.Slot, targets.InForce = 2, tc.inForce
			res, err := step(e.pass(targets), "anchor-write", map[string]any{"mode": "readopt"})
			if err != nil || res.Outcome != tc.want {
				t.Fatalf("outcome %s %v, want %s", res.Outcome, err, tc.want)
			}
			if tc.want == Claimed {
				wantAnn(t, "pool", e.pool(poolName).Annotations, ann(v1alpha1.Slot(2).Key(keyAnchor), claimA, v1alpha1.Slot(2).Key(keyMirror), "pending"))
			}
		})
	}
}

// Retarget keeps the newest pool copy the pass holds: a second slot's
// write in the same pass locks on the first one's result.
func TestRetargetKeepsThePoolCopy(t *testing.T) {
	e := newEnv(t, mkPool(poolName, nil), mkClaim("claim-b", nil))
	targets := e.targets()
	targets.Slot, targets.InForce = 1, 2
	p := e.pass(targets)
	if res, err := step(p, "anchor-write", map[string]any{"mode": "surge"}); err != nil || res.Outcome != Claimed {
		t.Fatalf("slot 1: %s %v", res.Outcome, err)
	}
	written := p.PoolResourceVersion()
	if written == targets.Pool.ResourceVersion {
		t.Fatal("the pass does not hold its own write")
	}
	second := targets
	second.Slot, second.Claim, second.ClaimObject = 2, "claim-b", nil
	p.Retarget(second)
	if p.PoolResourceVersion() != written {
		t.Fatal("Retarget replaced the pool copy the pass wrote with the observed one")
	}
	if res, err := step(p, "anchor-write", map[string]any{"mode": "surge"}); err != nil || res.Outcome != Claimed {
		t.Fatalf("slot 2 on the pass's own copy: %s %v", res.Outcome, err)
	}
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, claimA, v1alpha1.Slot(2).Key(keyAnchor), "claim-b"))
}

// An election one slot's steps left unconfirmed is not confirmed before
// the next slot's effects: it guards its own slot's effects only, so the
// second slot's placeholder costs no patch of the first slot's claim.
func TestRetargetDropsThePreviousSlotsElections(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "pending", v1alpha1.Slot(2).Key(keyAnchor), "claim-b", v1alpha1.Slot(2).Key(keyMirror), "pending")),
		mkClaim(claimA, ann(keyState, "pending", keyStarted, "2026-11-30T09:00:00Z")),
		mkClaim("claim-b", ann(keyState, "pending", keyStarted, "2026-11-30T09:00:00Z")))
	first := e.targets()
	first.Slot, first.InForce = 1, 2
	p := e.pass(first)
	reassert := engine.Decision{Transition: "test", Steps: pendingCreate().Steps[:1]}
	if ran, err := Run(ctxb, p, reassert); err != nil || !ran.Owned {
		t.Fatalf("slot 1: %+v %v", ran, err)
	}
	if len(e.writes) != 0 {
		t.Fatalf("a no-op election wrote %v", e.writes)
	}
	second := first
	second.Slot, second.Claim, second.ClaimObject = 2, "claim-b", e.claim("claim-b")
	second.PlaceholderKey.Name = "ph-claim-b"
	second.NewPlaceholder = newPlaceholder()
	second.NewPlaceholder.Name = "ph-claim-b"
	p.Retarget(second)
	if ran, err := Run(ctxb, p, pendingCreate()); err != nil || !ran.Owned {
		t.Fatalf("slot 2: %+v %v", ran, err)
	}
	want := []string{"patch NodeClaim/claim-b", "create Pod/" + phNS + "/ph-claim-b"}
	if !slices.Equal(e.writes, want) {
		t.Fatalf("writes %v, want %v (slot 2's own confirmation and its placeholder)", e.writes, want)
	}
}
