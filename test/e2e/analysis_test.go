//go:build e2e

package e2e_test

import (
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// rotation is what the records show of one rotation.
type rotation struct {
	startRV, endRV, deleteRV, surgeReadyRV int64
	surgeNode                              string
	created                                []string      // the NodeClaim behind its surge node, and any other created during it that no surge stands on
	drain                                  time.Duration // deletionTimestamp seen → claim gone seen
}

// rotationsOf reconstructs every rotation of pool from the records, keyed
// by the rotated claim: from its slot's anchor write to its release
// (docs/design.md#throughput: each slot's anchor on its own).
func rotationsOf(rec *recorder.Recorder, pool string) map[string]*rotation {
	out := map[string]*rotation{}
	records := rec.Sorted()
	current := map[v1alpha1.Slot]string{}
	for _, r := range records {
		if r.Kind != "NodePool" || r.Obj.GetName() != pool {
			continue
		}
		now := map[v1alpha1.Slot]string{}
		for _, a := range v1alpha1.Anchors(r.Obj.GetAnnotations()) {
			now[a.Slot] = a.Claim
		}
		for slot, claim := range current {
			if now[slot] != claim {
				out[claim].endRV = r.RV
			}
		}
		for slot, claim := range now {
			if current[slot] != claim {
				out[claim] = &rotation{startRV: r.RV}
			}
		}
		current = now
	}
	for claim, rot := range out {
		oldNode := ""
		var deletingSeen, goneSeen time.Time
		for _, r := range records {
			switch {
			case r.Kind == "NodeClaim" && r.Obj.GetName() == claim:
				if nc := r.Obj.(*karpv1.NodeClaim); nc.Status.NodeName != "" {
					oldNode = nc.Status.NodeName
				}
				if recorder.Deleting(r) && rot.deleteRV == 0 {
					rot.deleteRV, deletingSeen = r.RV, r.Seen
				}
				if recorder.Deleted(r) {
					goneSeen = r.Seen
				}
			case r.Kind == "NodeClaim" && recorder.Added(r) && r.Obj.GetLabels()[karpv1.NodePoolLabelKey] == pool &&
				r.RV > rot.startRV && (rot.endRV == 0 || r.RV < rot.endRV):
				rot.created = append(rot.created, r.Obj.GetName())
			}
		}
		for _, r := range records {
			if r.Kind == "Node" && r.Obj.GetName() != oldNode && r.Obj.GetLabels()[v1alpha1.LabelSurgeFor] == claim {
				rot.surgeNode = r.Obj.GetName()
				break
			}
		}
		for _, r := range records {
			if r.Kind == "Node" && r.Obj.GetName() == rot.surgeNode && nodeReady(r.Obj.(*corev1.Node)) {
				rot.surgeReadyRV = r.RV
				break
			}
		}
		if !deletingSeen.IsZero() && !goneSeen.IsZero() {
			rot.drain = goneSeen.Sub(deletingSeen)
		}
	}
	// A rotation's own NodeClaim is the one behind its surge node, whenever
	// during the rotations Karpenter created it: side by side, the
	// scheduler binds a placeholder to whichever surge node is Ready first,
	// which may be the claim Karpenter launched for another placeholder,
	// before this rotation's anchor. Any other claim created in a
	// rotation's span that no rotation's surge stands on is an extra
	// against it.
	surgeClaim := map[string]string{} // node → its claim
	addedAt := map[string]int64{}
	for _, r := range records {
		if r.Kind != "NodeClaim" {
			continue
		}
		if nc := r.Obj.(*karpv1.NodeClaim); nc.Status.NodeName != "" {
			surgeClaim[nc.Status.NodeName] = nc.Name
		}
		if recorder.Added(r) {
			addedAt[r.Obj.GetName()] = r.RV
		}
	}
	firstStart := int64(math.MaxInt64)
	surges := map[string]bool{}
	for _, rot := range out {
		firstStart = min(firstStart, rot.startRV)
		if c := surgeClaim[rot.surgeNode]; rot.surgeNode != "" && c != "" {
			surges[c] = true
		}
	}
	for _, rot := range out {
		var own []string
		if c := surgeClaim[rot.surgeNode]; rot.surgeNode != "" && c != "" && addedAt[c] > firstStart {
			own = append(own, c)
		}
		for _, c := range rot.created {
			if !surges[c] {
				own = append(own, c)
			}
		}
		rot.created = own
	}
	return out
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// maxInFlight is the largest number of the pool's claims that were pending
// or draining at any point of the record.
func maxInFlight(rec *recorder.Recorder, pool string) int {
	state := map[string]string{}
	most := 0
	for _, r := range rec.Sorted() {
		if r.Kind != "NodeClaim" || r.Obj.GetLabels()[karpv1.NodePoolLabelKey] != pool {
			continue
		}
		if recorder.Deleted(r) {
			delete(state, r.Obj.GetName())
		} else {
			state[r.Obj.GetName()] = r.Obj.GetAnnotations()[v1alpha1.AnnotationState]
		}
		n := 0
		for _, s := range state {
			if s == v1alpha1.StatePending || s == v1alpha1.StateDraining {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// longestPending is the longest time any Pod of ns created after sinceRV
// spent pending, as the watch saw it, and how many such Pods there were. A
// Pod is pending from its creation until it is first seen Running; one that
// never ran counts until it was deleted, or until end (the end of the
// observation) if it still exists — so a Pod stuck Pending is the longest
// wait, never skipped.
func longestPending(rec *recorder.Recorder, ns string, sinceRV int64, end time.Time) (time.Duration, int) {
	created := map[string]time.Time{}
	var longest time.Duration
	n := 0
	for _, r := range rec.Sorted() {
		if r.Kind != "Pod" || r.Obj.GetNamespace() != ns {
			continue
		}
		name := r.Obj.GetName()
		if recorder.Added(r) && r.RV > sinceRV {
			created[name] = r.Seen
			n++
		}
		t, waiting := created[name]
		if !waiting {
			continue
		}
		if p := r.Obj.(*corev1.Pod); p.Status.Phase == corev1.PodRunning || recorder.Deleted(r) {
			longest = max(longest, r.Seen.Sub(t))
			delete(created, name)
		}
	}
	for _, t := range created {
		longest = max(longest, end.Sub(t))
	}
	return longest, n
}
