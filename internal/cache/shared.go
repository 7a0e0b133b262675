package cache

import (
	"hash/maphash"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// The parts of a cached NodeClaim that its pool's other claims hold
// too — the requirements Karpenter copies from the pool's template, the
// node class reference, the allocatable of an instance type — are shared
// between them (internTable.sharedValue), as their labels are: each is
// otherwise decoded afresh for every claim. A part is looked up by a hash
// of its content and compared whole, so nothing is allocated to find it.
// Nothing cached is written in place (internTable.shared says why), so
// sharing is safe.

func sharedRequirements(rs []karpv1.NodeSelectorRequirementWithMinValues) []karpv1.NodeSelectorRequirementWithMinValues {
	if len(rs) == 0 {
		return rs
	}
	h := hasher()
	for _, r := range rs {
		writeStrings(&h, r.Key, string(r.Operator))
		writeStrings(&h, r.Values...)
		if r.MinValues != nil {
			maphash.WriteComparable(&h, *r.MinValues)
		}
	}
	return interned.sharedValue(h.Sum64(), rs, func(c any) bool {
		return slices.EqualFunc(c.([]karpv1.NodeSelectorRequirementWithMinValues), rs, sameRequirement)
	}).([]karpv1.NodeSelectorRequirementWithMinValues)
}

func sameRequirement(a, b karpv1.NodeSelectorRequirementWithMinValues) bool {
	return a.Key == b.Key && a.Operator == b.Operator && slices.Equal(a.Values, b.Values) &&
		(a.MinValues == nil) == (b.MinValues == nil) && (a.MinValues == nil || *a.MinValues == *b.MinValues)
}

func sharedNodeClassRef(ref *karpv1.NodeClassReference) *karpv1.NodeClassReference {
	if ref == nil {
		return nil
	}
	h := hasher()
	writeStrings(&h, ref.Group, ref.Kind, ref.Name)
	return interned.sharedValue(h.Sum64(), ref, func(c any) bool { return *c.(*karpv1.NodeClassReference) == *ref }).(*karpv1.NodeClassReference)
}

// sharedResources shares resource lists whose quantities are equal and
// written in the same format, so a shared list prints as the claim's own
// would.
func sharedResources(rl corev1.ResourceList) corev1.ResourceList {
	if len(rl) == 0 {
		return rl
	}
	var sum uint64
	for n, q := range rl {
		h := hasher()
		writeStrings(&h, string(n), string(q.Format))
		maphash.WriteComparable(&h, q.MilliValue())
		sum += h.Sum64()
	}
	return interned.sharedValue(sum, rl, func(c any) bool {
		return maps.EqualFunc(c.(corev1.ResourceList), rl, func(a, b resource.Quantity) bool { return a.Format == b.Format && a.Cmp(b) == 0 })
	}).(corev1.ResourceList)
}

func hasher() maphash.Hash {
	var h maphash.Hash
	h.SetSeed(interned.seed)
	return h
}

// writeStrings hashes each string with its length, so that no two lists
// of strings hash alike by their concatenation.
func writeStrings(h *maphash.Hash, ss ...string) {
	for _, s := range ss {
		maphash.WriteComparable(h, len(s))
		h.WriteString(s)
	}
}
