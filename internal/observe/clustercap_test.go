package observe

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// With a cap, the snapshot says when it is reached; without one, never.
func TestClusterCapSnapshot(t *testing.T) {
	other := nodePool(anchored("general-x"))
	other.Name, other.Labels = "other", map[string]string{"workload": "batch"}
	for _, c := range []struct {
		cap     Cap
		reached bool
	}{{NoCap, false}, {Cap{Max: 1, InFlight: 1}, true}, {Cap{Max: 2, InFlight: 1}, false}, {Cap{Max: 1, InFlight: 0}, false}} {
		cl := newClient(t, nil, nodePool(), governing(), other)
		obs, err := observerOn(cl, now).Observe(t.Context(), "general", c.cap)
		if err != nil {
			t.Fatal(err)
		}
		if obs.Snapshot.Pool.ClusterCapReached != c.reached {
			t.Errorf("cap %+v: reached %v, want %v", c.cap, obs.Snapshot.Pool.ClusterCapReached, c.reached)
		}
	}
}

// AnchoredElsewhere counts the other pools whose copy carries an anchor.
func TestAnchoredElsewhere(t *testing.T) {
	pool := func(name, anchor string) karpv1.NodePool {
		return karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1alpha1.AnnotationActiveRotation: anchor}}}
	}
	pools := []karpv1.NodePool{pool("a", "a-1"), pool("b", ""), pool("self", "self-1"), pool("c", "c-1")}
	if n := AnchoredElsewhere(pools, "self"); n != 2 {
		t.Errorf("%d, want 2 (a and c; never self)", n)
	}
}
