package cache

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

func req(key string, minValues *int, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	r := karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}
	r.MinValues = minValues
	return r
}

func samePointer(a, b any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// Claims decoded apart with the same requirements, node class and
// allocatable hold one copy of each; any difference in content keeps
// them apart, and every claim keeps what it was decoded with.
func TestClaimsShareRequirementsNodeClassAndAllocatable(t *testing.T) {
	two := 2
	claim := func(reqs []karpv1.NodeSelectorRequirementWithMinValues, cpu string, class string) *karpv1.NodeClaim {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
		c.Spec.Requirements = reqs
		c.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: class}
		c.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi")}
		got, err := LeanClaim(c)
		if err != nil {
			t.Fatal(err)
		}
		return got.(*karpv1.NodeClaim)
	}
	base := func() []karpv1.NodeSelectorRequirementWithMinValues {
		return []karpv1.NodeSelectorRequirementWithMinValues{req(karpv1.NodePoolLabelKey, nil, "general"), req(corev1.LabelArchStable, nil, "amd64", "arm64")}
	}
	a, b := claim(base(), "3900m", "default"), claim(base(), "3900m", "default")
	if !samePointer(a.Spec.Requirements, b.Spec.Requirements) || a.Spec.NodeClassRef != b.Spec.NodeClassRef || !samePointer(a.Status.Allocatable, b.Status.Allocatable) {
		t.Error("two claims of a pool hold their own requirements, node class or allocatable")
	}
	for name, other := range map[string]*karpv1.NodeClaim{
		"a value":      claim([]karpv1.NodeSelectorRequirementWithMinValues{req(karpv1.NodePoolLabelKey, nil, "general"), req(corev1.LabelArchStable, nil, "amd64")}, "3900m", "default"),
		"values split": claim([]karpv1.NodeSelectorRequirementWithMinValues{req(karpv1.NodePoolLabelKey, nil, "general"), req(corev1.LabelArchStable, nil, "amd64"), req("arm64", nil)}, "3900m", "default"),
		"minValues":    claim([]karpv1.NodeSelectorRequirementWithMinValues{req(karpv1.NodePoolLabelKey, &two, "general"), req(corev1.LabelArchStable, nil, "amd64", "arm64")}, "3900m", "default"),
	} {
		if samePointer(a.Spec.Requirements, other.Spec.Requirements) {
			t.Errorf("%s: different requirements shared: %v", name, other.Spec.Requirements)
		}
	}
	if c := claim(base(), "7900m", "default"); samePointer(a.Status.Allocatable, c.Status.Allocatable) || c.Status.Allocatable.Cpu().String() != "7900m" {
		t.Errorf("another instance type's allocatable: %v", c.Status.Allocatable)
	}
	if c := claim(base(), "3900m", "gpu"); a.Spec.NodeClassRef == c.Spec.NodeClassRef || c.Spec.NodeClassRef.Name != "gpu" {
		t.Errorf("another node class: %v", c.Spec.NodeClassRef)
	}
	if len(a.Spec.Requirements) != 2 || a.Spec.Requirements[1].Values[1] != "arm64" || a.Status.Allocatable.Memory().String() != "8Gi" {
		t.Errorf("a shared claim's content changed: %v %v", a.Spec.Requirements, a.Status.Allocatable)
	}
	notIn := base()
	notIn[1].Operator = corev1.NodeSelectorOpNotIn
	if c := claim(notIn, "3900m", "default"); samePointer(a.Spec.Requirements, c.Spec.Requirements) || c.Spec.Requirements[1].Operator != corev1.NodeSelectorOpNotIn {
		t.Errorf("requirements differing in an operator shared: %v", c.Spec.Requirements)
	}
	for _, ref := range []karpv1.NodeClassReference{{Group: "karpenter.kwok.sh", Kind: "EC2NodeClass", Name: "default"}, {Group: "karpenter.k8s.aws", Kind: "KWOKNodeClass", Name: "default"}} {
		if got := sharedNodeClassRef(&ref); got == a.Spec.NodeClassRef || *got != ref {
			t.Errorf("node class %v shared with %v", ref, *a.Spec.NodeClassRef)
		}
	}
	// Equal values written in another format, or under another resource
	// name, are another list: a shared list prints as the claim's own.
	for _, rl := range []corev1.ResourceList{
		{corev1.ResourceCPU: resource.MustParse("3900m"), corev1.ResourcePods: resource.MustParse("8Gi")},
		{corev1.ResourceCPU: resource.MustParse("3900m"), corev1.ResourceMemory: *resource.NewQuantity(8<<30, resource.DecimalSI)},
	} {
		if got := sharedResources(rl); samePointer(got, a.Status.Allocatable) || !reflect.DeepEqual(got, rl) {
			t.Errorf("resources %v shared with %v", rl, a.Status.Allocatable)
		}
	}
	if sharedRequirements(nil) != nil || sharedResources(nil) != nil || sharedNodeClassRef(nil) != nil {
		t.Error("nothing became something")
	}
}
