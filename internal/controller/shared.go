package controller

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// The parts of a cached NodeClaim that its pool's other claims hold
// too — the requirements Karpenter copies from the pool's template, the
// node class reference, the allocatable of an instance type — are shared
// between them (internTable.sharedValue), as their labels are: each is
// otherwise decoded afresh for every claim. Nothing cached is written in
// place (internTable.shared says why), so sharing is safe.

// sep cannot occur in a label key or value, a resource name or a
// quantity, so a key built with it spells its parts out unambiguously.
const sep = "\x00"

func sharedRequirements(rs []karpv1.NodeSelectorRequirementWithMinValues) []karpv1.NodeSelectorRequirementWithMinValues {
	if len(rs) == 0 {
		return rs
	}
	var b strings.Builder
	b.WriteString("requirements")
	for _, r := range rs {
		b.WriteString(sep + r.Key + sep + string(r.Operator) + sep + strconv.Itoa(len(r.Values)))
		for _, v := range r.Values {
			b.WriteString(sep + v)
		}
		if r.MinValues != nil {
			b.WriteString(sep + "min=" + strconv.Itoa(*r.MinValues))
		} else {
			b.WriteString(sep + "min=nil")
		}
	}
	return interned.sharedValue(b.String(), rs).([]karpv1.NodeSelectorRequirementWithMinValues)
}

func sharedNodeClassRef(ref *karpv1.NodeClassReference) *karpv1.NodeClassReference {
	if ref == nil {
		return nil
	}
	return interned.sharedValue("nodeClassRef"+sep+ref.Group+sep+ref.Kind+sep+ref.Name, ref).(*karpv1.NodeClassReference)
}

// sharedResources keys a resource list by each quantity as written
// (String is canonical): two lists with the same key hold equal
// quantities.
func sharedResources(rl corev1.ResourceList) corev1.ResourceList {
	if len(rl) == 0 {
		return rl
	}
	names := make([]string, 0, len(rl))
	for n := range rl {
		names = append(names, string(n))
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("resources")
	for _, n := range names {
		q := rl[corev1.ResourceName(n)]
		b.WriteString(sep + n + sep + q.String())
	}
	return interned.sharedValue(b.String(), rl).(corev1.ResourceList)
}
