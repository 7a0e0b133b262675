package controller

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// governingAt is the always-open policy with maxUnavailable n.
func governingAt(n int32) *v1alpha1.RotationPolicy {
	spec := alwaysOpen()
	spec.Surge.MaxUnavailable = ptr.To(intstr.FromInt32(n))
	spec.Surge.CooldownAfter = "0s"
	return rotationPolicy("api", spec)
}

func anchorsOf(t *testing.T, w *world) map[string]v1alpha1.Slot {
	t.Helper()
	out := map[string]v1alpha1.Slot{}
	for _, a := range v1alpha1.Anchors(get(t, w.api, "general", "", &karpv1.NodePool{}).Annotations) {
		out[a.Claim] = a.Slot
	}
	return out
}

// With maxUnavailable 3, passes start the three earliest deadlines in three
// slots and never a fourth, each start announced once
// (docs/design.md#throughput).
func TestThreeSlotsFillAndNoMore(t *testing.T) {
	w := newWorld(t, nil, nodePool("general"), governingAt(3),
		nodeClaim("general-a", 20*time.Minute, "node-a"), node("node-a"),
		nodeClaim("general-b", 25*time.Minute, "node-b"), node("node-b"),
		nodeClaim("general-c", 30*time.Minute, "node-c"), node("node-c"),
		nodeClaim("general-d", 35*time.Minute, "node-d"), node("node-d"))
	started := 0
	for range 12 {
		w.reconcile(t, "general")
		for _, e := range w.rec.drain() {
			if strings.Contains(e, "RotationStarted") {
				started++
			}
		}
		if n := len(anchorsOf(t, w)); n > 3 {
			t.Fatalf("%d slots anchored: %v", n, anchorsOf(t, w))
		}
	}
	got := anchorsOf(t, w)
	if len(got) != 3 || got["general-d"] != 0 {
		t.Fatalf("anchors %v, want general-a, -b and -c", got)
	}
	if got["general-a"] != 1 {
		t.Errorf("the first start took slot %d, want 1", got["general-a"])
	}
	if started != 3 {
		t.Errorf("RotationStarted said %d times, want 3", started)
	}
}

// A pass whose first slot wrote the pool leaves the free slot's start to a
// pass at once on the newer pool: it never starts on gates judged before
// the write.
func TestAStartWaitsForThePassAfterAnotherSlotsWrite(t *testing.T) {
	w := newWorld(t, nil,
		// slot 1's claim is gone after its drain: its release writes the pool
		nodePool("general", v1alpha1.AnnotationActiveRotation, "general-gone", v1alpha1.AnnotationActiveRotationState, v1alpha1.StateDraining,
			v1alpha1.AnnotationDrainingAt, stamp(now.Add(-5*time.Minute))),
		governingAt(2),
		nodeClaim("general-b", 25*time.Minute, "node-b"), node("node-b"))
	if res := w.reconcile(t, "general"); res != (reconcile.Result{RequeueAfter: immediately}) {
		t.Errorf("result %+v, want the pass at once", res)
	}
	if got := anchorsOf(t, w); len(got) != 0 {
		t.Fatalf("anchors after the release pass %v, want none: the start waits", got)
	}
	if tr := w.transitions(); len(tr) == 0 || tr[0] != "gone.complete" {
		t.Fatalf("decisions %v, want gone.complete first", tr)
	}
	for _, tr := range w.transitions() {
		if tr == "idle.start" {
			t.Fatalf("decisions %v: the free slot started in the pass that released slot 1", w.transitions())
		}
	}
	w.reconcile(t, "general")
	if got := anchorsOf(t, w); len(got) != 1 || got["general-b"] == 0 {
		t.Errorf("anchors after the next pass %v, want general-b", got)
	}
}
