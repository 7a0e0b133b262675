package surge

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Shortfall names the first limited resource the placeholder does not fit.
type Shortfall struct {
	Resource  corev1.ResourceName
	Want      resource.Quantity
	Remaining resource.Quantity
	Limit     resource.Quantity
}

// Headroom checks that requests fit NodePool spec.limits − status.resources
// for every limited resource (docs/design.md#start-gates); ok is false with
// the first shortfall (by resource name) otherwise. A pool without limits
// always has room.
func Headroom(pool *karpv1.NodePool, requests corev1.ResourceList) (Shortfall, bool) {
	return HeadroomBeside(pool, requests, nil)
}

// HeadroomBeside is Headroom for a placeholder beside others of the pool
// still waiting for their surge node: status.resources does not count the
// nodes those will bring, so their requests are taken off the room first
// (docs/design.md#throughput).
func HeadroomBeside(pool *karpv1.NodePool, requests, waiting corev1.ResourceList) (Shortfall, bool) {
	names := make([]string, 0, len(pool.Spec.Limits))
	for n := range pool.Spec.Limits {
		names = append(names, string(n))
	}
	sort.Strings(names)
	for _, n := range names {
		name := corev1.ResourceName(n)
		want, asked := requests[name]
		if !asked || want.IsZero() {
			continue
		}
		limit := pool.Spec.Limits[name]
		remaining := limit.DeepCopy()
		if used, ok := pool.Status.Resources[name]; ok {
			remaining.Sub(used)
		}
		if w, ok := waiting[name]; ok {
			remaining.Sub(w)
		}
		if want.Cmp(remaining) > 0 {
			return Shortfall{Resource: name, Want: want, Remaining: remaining, Limit: limit}, false
		}
	}
	return Shortfall{}, true
}

// Waiting sums the requests of the placeholders not yet bound to a node
// and not terminating, but the one named except: the surge nodes the pool's
// other rotations are still waiting for.
func Waiting(placeholders []*corev1.Pod, except string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, p := range placeholders {
		if p.Name == except || p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Spec.Containers {
			for name, q := range c.Resources.Requests {
				sum := out[name]
				sum.Add(q)
				out[name] = sum
			}
		}
	}
	return out
}
