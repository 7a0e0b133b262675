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
		if want.Cmp(remaining) > 0 {
			return Shortfall{Resource: name, Want: want, Remaining: remaining, Limit: limit}, false
		}
	}
	return Shortfall{}, true
}
