package invariants

import (
	"fmt"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// checkAtOnce replays the watch record after SinceRV in resourceVersion
// order — the API server's own order — and holds each pool to its
// maxUnavailable (docs/design.md#throughput): never more than MaxAtOnce
// slots anchored on one version of the NodePool, placeholders alive for
// claims it anchored, or claims it anchored deleting, at any revision.
func checkAtOnce(in Input, r *Report) {
	if in.Records == nil || in.MaxAtOnce == 0 {
		return
	}
	for _, pool := range in.Pools {
		most := MostAtOnce(in.Records, pool, in.Namespace, in.SinceRV)
		obj := "NodePool/" + pool
		for _, m := range []struct {
			what string
			n    int
			rv   int64
		}{{"slots anchored", most.Anchored, most.anchoredRV}, {"placeholders", most.Placeholders, most.placeholdersRV}, {"rotated claims deleting", most.Deleting, most.deletingRV}} {
			r.check(m.n <= in.MaxAtOnce, OverMaxUnavailable, obj, "%d %s at once at resourceVersion %d, maxUnavailable %d", m.n, m.what, m.rv, in.MaxAtOnce)
		}
	}
}

// AtOnce is the most of each kind a pool had at once after a revision:
// slots anchored, placeholders (in the controller's namespace) and old
// claims it anchored deleting; and the revision where each was first seen.
type AtOnce struct {
	Anchored, Placeholders, Deleting       int
	anchoredRV, placeholdersRV, deletingRV int64
}

func (m AtOnce) String() string {
	return fmt.Sprintf("at once: %d anchored, %d placeholders, %d deleting", m.Anchored, m.Placeholders, m.Deleting)
}

// MostAtOnce replays rec for pool after sinceRV; the state before sinceRV
// is replayed too, so what was already in flight counts.
func MostAtOnce(rec *recorder.Recorder, pool, namespace string, sinceRV int64) AtOnce {
	var most AtOnce
	anchoredEver := map[string]bool{}
	placeholders, deleting := map[string]bool{}, map[string]bool{}
	for _, rec := range rec.Sorted() {
		name := rec.Obj.GetName()
		switch {
		case rec.Kind == "NodePool" && name == pool:
			anchors := v1alpha1.Anchors(rec.Obj.GetAnnotations())
			for _, a := range anchors {
				anchoredEver[a.Claim] = true
			}
			if rec.RV > sinceRV && len(anchors) > most.Anchored {
				most.Anchored, most.anchoredRV = len(anchors), rec.RV
			}
		case rec.Kind == "Pod" && rec.Obj.GetNamespace() == namespace && rec.Obj.GetLabels()[v1alpha1.LabelNodePool] == pool:
			// a rotation's placeholder; one no anchor ever named (the
			// crash campaign plants one for the startup sweep to remove)
			// is not a rotation's
			track(placeholders, name, anchoredEver[rec.Obj.GetLabels()[v1alpha1.LabelSurgeFor]] && !recorder.Deleted(rec))
			if rec.RV > sinceRV && len(placeholders) > most.Placeholders {
				most.Placeholders, most.placeholdersRV = len(placeholders), rec.RV
			}
		case rec.Kind == "NodeClaim" && rec.Obj.GetLabels()[karpv1.NodePoolLabelKey] == pool:
			// an old claim the pool anchored, deleted by its rotation; a
			// surge node Karpenter reaps after a rollback is not one
			track(deleting, name, anchoredEver[name] && recorder.Deleting(rec) && !recorder.Deleted(rec))
			if rec.RV > sinceRV && len(deleting) > most.Deleting {
				most.Deleting, most.deletingRV = len(deleting), rec.RV
			}
		}
	}
	return most
}

// track puts name in set or takes it out.
func track(set map[string]bool, name string, in bool) {
	if in {
		set[name] = true
	} else {
		delete(set, name)
	}
}
