package cache

import (
	"fmt"
	"maps"
	"reflect"
	"testing"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// LeanNode keeps what the facts read and drops the rest.
func TestLeanNode(t *testing.T) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: "c", UID: "u"}}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "t", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			},
			Images:    []corev1.ContainerImage{{Names: []string{"registry.example/app:1"}, SizeBytes: 1 << 30}},
			NodeInfo:  corev1.NodeSystemInfo{KubeletVersion: "v1.35.4"},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
		},
	}
	got, err := LeanNode(n)
	if err != nil {
		t.Fatal(err)
	}
	l := got.(*corev1.Node)
	if l.ManagedFields != nil || l.OwnerReferences != nil || l.Status.Images != nil || l.Status.Addresses != nil || l.Status.NodeInfo.KubeletVersion != "" || l.Status.Allocatable != nil || l.Status.Capacity != nil {
		t.Errorf("kept what no fact reads: %+v", l)
	}
	if len(l.Status.Conditions) != 1 || l.Status.Conditions[0].Type != corev1.NodeReady {
		t.Errorf("conditions %v, want Ready alone", l.Status.Conditions)
	}
	if l.Labels["a"] != "b" || l.Annotations["c"] != "d" || !l.Spec.Unschedulable || len(l.Spec.Taints) != 1 {
		t.Errorf("dropped what a fact reads: %+v", l)
	}
	if other, _ := LeanNode(&corev1.Pod{}); other == nil {
		t.Error("another kind is dropped, not passed through")
	}
}

// LeanClaim keeps the Ready condition, Launched only while it is not
// True (a surge claim's launch failure), and Initialized,
// InstanceTerminating and Rebooting only while True (the disruption
// budget's count).
func TestLeanClaim(t *testing.T) {
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "karpenter"}},
		Labels: map[string]string{karpv1.NodePoolLabelKey: "general", corev1.LabelArchStable: "amd64", corev1.LabelHostname: "c", v1alpha1.LabelSurgeFor: "x"}}}
	c.Spec.ExpireAfter = karpv1.MustParseNillableDuration("720h")
	c.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z1"}}}
	c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	c.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	c.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3900m")}
	c.Status.ImageID = "ami-1"
	c.Status.NodeName = "n"
	c.Status.Conditions = []status.Condition{{Type: "Launched", Status: metav1.ConditionTrue}, {Type: "Ready", Status: metav1.ConditionTrue}, {Type: "Drifted", Status: metav1.ConditionFalse}}
	got, err := LeanClaim(c)
	if err != nil {
		t.Fatal(err)
	}
	l := got.(*karpv1.NodeClaim)
	if l.ManagedFields != nil || len(l.Status.Conditions) != 1 || l.Status.Conditions[0].Type != "Ready" || l.Status.NodeName != "n" {
		t.Errorf("lean claim %+v", l)
	}
	if want := map[string]string{karpv1.NodePoolLabelKey: "general", v1alpha1.LabelSurgeFor: "x"}; !maps.Equal(l.Labels, want) {
		t.Errorf("labels %v, want the pool's and this controller's alone: %v", l.Labels, want)
	}
	if l.Spec.Resources.Requests != nil || l.Status.Capacity != nil || l.Status.ImageID != "" {
		t.Errorf("kept what no fact reads: %+v", l)
	}
	// Read by the census (expireAfter), the placeholder (requirements) and
	// the sizing clamp (allocatable).
	if l.Spec.ExpireAfter.Duration == nil || len(l.Spec.Requirements) != 1 || l.Status.Allocatable.Cpu().String() != "3900m" {
		t.Errorf("dropped what a fact reads: %+v", l)
	}
	c.Status.Conditions = nil
	if got, _ := LeanClaim(c); len(got.(*karpv1.NodeClaim).Status.Conditions) != 0 {
		t.Error("a claim without Ready gained a condition")
	}
	c.Status.Conditions = []status.Condition{{Type: "Launched", Status: metav1.ConditionUnknown, Reason: "LaunchFailed", Message: "boom"}, {Type: "Registered", Status: metav1.ConditionUnknown}}
	got, _ = LeanClaim(c)
	if cs := got.(*karpv1.NodeClaim).Status.Conditions; len(cs) != 1 || cs[0].Reason != "LaunchFailed" {
		t.Errorf("a launch failure is what fail-fast reads; kept %+v", cs)
	}
	c.Status.Conditions = []status.Condition{{Type: "Initialized", Status: metav1.ConditionTrue}, {Type: "InstanceTerminating", Status: metav1.ConditionTrue},
		{Type: "Rebooting", Status: metav1.ConditionTrue}, {Type: "Rebooting", Status: metav1.ConditionFalse},
		{Type: "Initialized", Status: metav1.ConditionUnknown}, {Type: "InstanceTerminating", Status: metav1.ConditionFalse}}
	got, _ = LeanClaim(c)
	if cs := got.(*karpv1.NodeClaim).Status.Conditions; len(cs) != 3 || cs[0].Type != "Initialized" || cs[1].Type != "InstanceTerminating" || cs[2].Type != "Rebooting" {
		t.Errorf("Initialized and InstanceTerminating once True are what the budget's count reads; kept %+v", cs)
	}
}

const ns = "node-rotation-system"

// The cache holds Pods only in the controller's namespace and only ours
// (the placeholders and pre-pull Pods, managed-by node-rotation-controller), Nodes only of a NodePool; Nodes, NodeClaims and
// NodePools through their transforms (options_test.go).
func TestCacheOptions(t *testing.T) {
	opts := Options(ns, false)
	if opts.NewInformer != nil {
		t.Error("a watch of its own: every object is watched through client-go's informer and decoder")
	}
	kinds := map[string]bool{}
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*karpv1.NodeClaim); ok && (by.Label != nil || by.Field != nil || opts.DefaultLabelSelector != nil || opts.DefaultFieldSelector != nil) {
			t.Errorf("NodeClaims cached with a selector (label %v, field %v): the cache holds every NodeClaim", by.Label, by.Field)
		}
		kinds[fmt.Sprintf("%T", obj)] = true
		if by.Transform == nil {
			t.Errorf("%T cached without a transform", obj)
		}
		if _, ok := obj.(*corev1.Node); ok {
			for set, want := range map[string]bool{karpv1.NodePoolLabelKey + "=general": true, "node-role.kubernetes.io/control-plane=": false, "": false} {
				l, err := labels.ConvertSelectorToLabelsMap(set)
				if err != nil {
					t.Fatal(err)
				}
				if by.Label == nil || by.Label.Matches(l) != want {
					t.Errorf("Node selector %v matches %q: want %v", by.Label, set, want)
				}
			}
		}
		if _, ok := obj.(*corev1.Pod); !ok {
			continue
		}
		if len(by.Namespaces) != 1 {
			t.Errorf("namespaces %v", by.Namespaces)
		}
		if _, ok := by.Namespaces[ns]; !ok {
			t.Errorf("namespaces %v lack %s", by.Namespaces, ns)
		}
		ours := v1alpha1.LabelManagedBy + "=" + v1alpha1.ManagedBy
		for set, want := range map[string]bool{
			ours + "," + v1alpha1.LabelSurgeFor + "=general-a": true, ours + "," + v1alpha1.LabelPrePullFor + "=general-a": true,
			v1alpha1.LabelSurgeFor + "=general-a": false, v1alpha1.LabelManagedBy + "=Helm": false, "app=web": false, "": false,
		} {
			l, err := labels.ConvertSelectorToLabelsMap(set)
			if err != nil {
				t.Fatal(err)
			}
			if got := by.Label.Matches(l); got != want {
				t.Errorf("selector %s matches %q: %v", by.Label, set, got)
			}
		}
	}
	want := map[string]bool{"*v1.Pod": true, "*v1.Node": true, "*v1.NodeClaim": true, "*v1.NodePool": true, "*v1.PodDisruptionBudget": true}
	if !reflect.DeepEqual(kinds, want) {
		t.Errorf("cached by object: %v, want %v", kinds, want)
	}
	// Nodes and NodeClaims go through the lean transforms, not just a
	// managedFields strip
	for obj, by := range opts.ByObject {
		switch obj.(type) {
		case *corev1.Node:
			n := &corev1.Node{Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{SizeBytes: 1}}}}
			if got, _ := by.Transform(n); len(got.(*corev1.Node).Status.Images) != 0 {
				t.Error("the Node cache keeps the image list")
			}
		case *karpv1.NodeClaim:
			c := &karpv1.NodeClaim{}
			c.Status.Conditions = []status.Condition{{Type: "Launched", Status: "True"}}
			if got, _ := by.Transform(c); len(got.(*karpv1.NodeClaim).Status.Conditions) != 0 {
				t.Error("the NodeClaim cache keeps conditions other than Ready and a Launched that is not True")
			}
		}
	}
}

// With -prepull-use-pull-secrets the controller's Pods are cached in every
// namespace, still only those labelled as its own; the rest is unchanged.
func TestCacheOptionsEveryNamespace(t *testing.T) {
	narrow, wide := Options(ns, false), Options(ns, true)
	pods := 0
	for obj, by := range wide.ByObject {
		if _, ok := obj.(*corev1.Pod); !ok {
			continue
		}
		pods++
		if by.Namespaces != nil {
			t.Errorf("namespaces %v, want every one", by.Namespaces)
		}
		ours := labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedBy, v1alpha1.LabelPrePullFor: "general-a"}
		if by.Label == nil || !by.Label.Matches(ours) || by.Label.Matches(labels.Set{"app": "web"}) {
			t.Errorf("Pod selector %v: want only the controller's own", by.Label)
		}
	}
	if pods != 1 {
		t.Errorf("%d Pod entries in the cache options, want one", pods)
	}
	if len(narrow.ByObject) != len(wide.ByObject) {
		t.Errorf("%d kinds cached, want %d as without the flag", len(wide.ByObject), len(narrow.ByObject))
	}
}
