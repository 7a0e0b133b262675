package observe

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// governingAt is the always-open policy with maxUnavailable n.
func governingAt(n int32) *v1alpha1.RotationPolicy {
	spec := alwaysOpen()
	spec.Surge.MaxUnavailable = ptr.To(intstr.FromInt32(n))
	return rotationPolicy("api", spec)
}

func inSlot(s v1alpha1.Slot, claim, mirror string) func(*karpv1.NodePool) {
	return poolAnnotations(s.Key(v1alpha1.AnnotationActiveRotation), claim, s.Key(v1alpha1.AnnotationActiveRotationState), mirror)
}

type slotView struct {
	slot    v1alpha1.Slot
	subject string
	anchor  string
}

func slotsOf(obs *Observation) []slotView {
	var out []slotView
	for _, s := range obs.Slots {
		out = append(out, slotView{s.Slot, s.SubjectName, s.Snapshot.Pool.Anchor})
	}
	return out
}

// Each anchored slot is observed about its own claim, in slot order, then
// the free slot below the number in force about the candidate; the
// window's snapshot is anchored while any slot is.
func TestSlotsAtThree(t *testing.T) {
	obs := observeNow(t, governingAt(3),
		nodePool(inSlot(1, "a", "pending"), inSlot(3, "c", "draining")),
		nodeClaim("a", time.Hour, "node-a", inState("pending"), startedAt(now.Add(-time.Minute))),
		nodeClaim("c", 2*time.Hour, "node-c", inState("draining")),
		nodeClaim("d", 10*time.Minute, "node-d"),
		nodeClaim("e", 400*time.Hour, "node-e"),
		node("node-a"), node("node-c"), node("node-d"), node("node-e"))
	want := []slotView{{1, "a", "a"}, {3, "c", "c"}, {2, "d", ""}}
	if got := slotsOf(obs); !equalViews(got, want) {
		t.Fatalf("slots = %+v, want %+v", got, want)
	}
	if obs.InForce.N != 3 {
		t.Errorf("in force = %+v, want 3", obs.InForce)
	}
	if s := obs.Slots[1].Snapshot; s.Pool.RotationState != "draining" || !s.Claim.Exists || s.Claim.State != "draining" {
		t.Errorf("slot 3's snapshot reads %+v / %+v, want its own mirror and claim", s.Pool, s.Claim)
	}
	if s := obs.Slots[2].Snapshot; s.Candidate != "surge" || s.Pool.Anchor != "" {
		t.Errorf("the free slot's snapshot: candidate %s anchor %q", s.Candidate, s.Pool.Anchor)
	}
	if obs.Snapshot.Pool.Anchor == "" {
		t.Error("the window's snapshot says no rotation is in flight")
	}
	if obs.FreeSlot() != obs.Slots[2] {
		t.Error("FreeSlot is not the free slot")
	}
}

// At the number in force no slot is free: no candidate is taken, and the
// drain blockers are not read.
func TestSlotsFull(t *testing.T) {
	obs := observeNow(t, governingAt(2),
		nodePool(inSlot(1, "a", "pending"), inSlot(2, "b", "pending")),
		nodeClaim("a", time.Hour, "node-a", inState("pending")),
		nodeClaim("b", time.Hour, "node-b", inState("pending")),
		nodeClaim("d", time.Hour, "node-d"),
		node("node-a"), node("node-b"), node("node-d"))
	if got, want := slotsOf(obs), []slotView{{1, "a", "a"}, {2, "b", "b"}}; !equalViews(got, want) {
		t.Fatalf("slots = %+v, want %+v", got, want)
	}
	if obs.FreeSlot() != nil || obs.CensusInput.DrainBlockers != nil {
		t.Error("a full pool has a free slot, or read the drain blockers")
	}
}

// One rotation at a time is as it always was: one slot, slot 1, whose
// snapshot is the window's too.
func TestOneSlotAtOne(t *testing.T) {
	obs := observeNow(t, governing(), nodePool(anchored("a"), poolAnnotations(v1alpha1.AnnotationActiveRotationState, "pending")),
		nodeClaim("a", time.Hour, "node-a", inState("pending")), nodeClaim("d", time.Hour, "node-d"), node("node-a"), node("node-d"))
	if got, want := slotsOf(obs), []slotView{{1, "a", "a"}}; !equalViews(got, want) {
		t.Fatalf("slots = %+v, want %+v", got, want)
	}
	if obs.SubjectName != "a" || obs.Snapshot.Pool.Anchor != "a" || obs.Snapshot.Claim.State != "pending" {
		t.Errorf("the pool's own observation is not slot 1's: %s %+v", obs.SubjectName, obs.Snapshot)
	}
}

// A stranded rotation is shown to one slot only: an anchored slot whose
// claim is gone supersedes it; else the free slot re-adopts it; else (the
// pool full) the first anchored slot repairs it.
func TestStrandedGoesToOneSlot(t *testing.T) {
	stranded := nodeClaim("s", time.Hour, "node-s", inState("pending"))
	base := []client.Object{stranded, node("node-s"), nodeClaim("a", time.Hour, "node-a", inState("pending")), node("node-a")}
	owner := func(obs *Observation) []v1alpha1.Slot {
		var out []v1alpha1.Slot
		for _, s := range obs.Slots {
			if s.Snapshot.Stranded != "none" {
				out = append(out, s.Slot)
			}
		}
		return out
	}
	for _, c := range []struct {
		name string
		n    int32
		pool func(*karpv1.NodePool)
		want []v1alpha1.Slot
	}{
		{"a gone claim's slot supersedes", 3, func(np *karpv1.NodePool) {
			inSlot(1, "a", "pending")(np)
			inSlot(2, "gone", "pending")(np)
		}, []v1alpha1.Slot{2}},
		{"else the free slot re-adopts", 3, inSlot(1, "a", "pending"), []v1alpha1.Slot{2}},
		{"else the first anchored slot repairs", 1, inSlot(1, "a", "pending"), []v1alpha1.Slot{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs := observeNow(t, append([]client.Object{governingAt(c.n), nodePool(c.pool)}, base...)...)
			if got := owner(obs); len(got) != len(c.want) || got[0] != c.want[0] {
				t.Errorf("stranded shown to slots %v, want %v (slots %+v)", got, c.want, slotsOf(obs))
			}
		})
	}
}

// The cluster cap counts this pool's other slots beside the other pools'.
func TestClusterCapCountsOwnSlots(t *testing.T) {
	objs := []client.Object{governingAt(3), nodePool(inSlot(1, "a", "pending")),
		nodeClaim("a", time.Hour, "node-a", inState("pending")), nodeClaim("d", time.Hour, "node-d"), node("node-a"), node("node-d")}
	for _, c := range []struct {
		elsewhere, max int
		reached        bool
	}{{0, 2, false}, {1, 2, true}, {1, 3, false}} {
		obs, err := observerOn(newClient(t, nil, objs...), now).Observe(context.Background(), "general", Cap{Max: c.max, InFlight: c.elsewhere})
		if err != nil {
			t.Fatal(err)
		}
		free := obs.FreeSlot()
		if free == nil || free.Snapshot.Pool.ClusterCapReached != c.reached {
			t.Errorf("cap %d with %d elsewhere and 1 here: reached = %v, want %v", c.max, c.elsewhere, free != nil && free.Snapshot.Pool.ClusterCapReached, c.reached)
		}
		if obs.Slots[0].Snapshot.Pool.ClusterCapReached != (c.elsewhere >= c.max) {
			t.Errorf("the anchored slot counts itself")
		}
	}
}

func equalViews(a, b []slotView) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
