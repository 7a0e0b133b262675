package invariants

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// slotsPool anchors claims in slots 1, 2, … in order.
func slotsPool(claims ...string) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool, Annotations: map[string]string{}}}
	for i, c := range claims {
		np.Annotations[v1alpha1.Slot(i+1).Key(v1alpha1.AnnotationActiveRotation)] = c
	}
	return np
}

func placeholder(claim string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-" + claim, Namespace: ns,
		Labels: map[string]string{v1alpha1.LabelSurgeFor: claim, v1alpha1.LabelNodePool: pool}}}
}

func deletingClaim(name string) *karpv1.NodeClaim {
	c := claim(name, v1alpha1.StateDraining)
	c.DeletionTimestamp = &metav1.Time{Time: t0}
	return c
}

// Two rotations of a pool at once under maxUnavailable 2, then a third
// started as one ended: at most two of anything at any revision. Each case
// breaks one count by one more than the limit and must be reported, at
// the revision it happened.
func TestAtMostMaxUnavailableAtOnce(t *testing.T) {
	base := func() []recorder.Record {
		return []recorder.Record{
			rec(6, watch.Modified, slotsPool("a", "b"), 0),
			rec(7, watch.Added, placeholder("a"), 0),
			rec(8, watch.Added, placeholder("b"), 0),
			rec(9, watch.Modified, deletingClaim("a"), 0),
			rec(10, watch.Deleted, placeholder("a"), 0),
			rec(11, watch.Modified, deletingClaim("b"), 0),
			rec(12, watch.Deleted, deletingClaim("a"), 0),
			rec(13, watch.Modified, slotsPool("", "b", "c"), 0), // slot 1 released, slot 3 taken
			rec(14, watch.Added, placeholder("c"), 0),
			rec(15, watch.Deleted, placeholder("b"), 0),
			// a surge claim Karpenter reaps, a placeholder no anchor names
			// (the crash campaign's for the sweep): not a rotation's
			rec(16, watch.Modified, deletingClaim("s"), 0),
			rec(17, watch.Added, placeholder("ghost"), 0),
		}
	}
	check := func(records []recorder.Record) *Report {
		r := &Report{}
		checkAtOnce(Input{Pools: []string{pool}, Namespace: ns, Records: recorder.Of(records...), SinceRV: 5, MaxAtOnce: 2}, r)
		return r
	}
	if r := check(base()); len(r.Violations) != 0 || r.Checks != 3 {
		t.Fatalf("two at once under maxUnavailable 2: %s (checks %d)", r, r.Checks)
	}
	for _, c := range []struct {
		name, want string
		extra      []recorder.Record
	}{
		{"a third slot anchored", "3 slots anchored at once at resourceVersion 20",
			[]recorder.Record{rec(20, watch.Modified, slotsPool("a", "b", "c"), 0)}},
		// c's placeholder is alive: two more of anchored claims make three
		{"a third placeholder", "3 placeholders at once at resourceVersion 21",
			[]recorder.Record{rec(20, watch.Added, placeholder("a"), 0), rec(21, watch.Added, placeholder("b"), 0)}},
		// b is deleting; d takes slot 1, then c and d are deleted too
		{"a third rotated claim deleting", "3 rotated claims deleting at once at resourceVersion 22",
			[]recorder.Record{rec(20, watch.Modified, slotsPool("d", "b"), 0), rec(21, watch.Modified, deletingClaim("c"), 0), rec(22, watch.Modified, deletingClaim("d"), 0)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := check(append(base(), c.extra...))
			if len(r.Violations) != 1 || r.Violations[0].Invariant != OverMaxUnavailable || !strings.Contains(r.Violations[0].Detail, c.want) {
				t.Fatalf("want one %s violation %q, got %s", OverMaxUnavailable, c.want, r)
			}
		})
	}
}
