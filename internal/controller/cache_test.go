package controller

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/claimwatch"
)

// leanNode keeps what the facts read and drops the rest.
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
	got, err := leanNode(n)
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
	if other, _ := leanNode(&corev1.Pod{}); other == nil {
		t.Error("another kind is dropped, not passed through")
	}
}

// leanClaim keeps the Ready condition, and Launched only while it is not
// True (a surge claim's launch failure).
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
	got, err := leanClaim(c)
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
	if got, _ := leanClaim(c); len(got.(*karpv1.NodeClaim).Status.Conditions) != 0 {
		t.Error("a claim without Ready gained a condition")
	}
	c.Status.Conditions = []status.Condition{{Type: "Launched", Status: metav1.ConditionUnknown, Reason: "LaunchFailed", Message: "boom"}, {Type: "Registered", Status: metav1.ConditionUnknown}}
	got, _ = leanClaim(c)
	if cs := got.(*karpv1.NodeClaim).Status.Conditions; len(cs) != 1 || cs[0].Reason != "LaunchFailed" {
		t.Errorf("a launch failure is what fail-fast reads; kept %+v", cs)
	}
}

// What internal/claimwatch leaves undecoded (claimwatch.Skipped) is what
// leanClaim drops anyway, so the cache holds the same claims either way.
func TestClaimWatchSkipsOnlyWhatLeanClaimDrops(t *testing.T) {
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "karpenter"}}}}
	c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3")}
	c.Status.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	c.Status.ImageID = "ami-1"
	for _, path := range claimwatch.Skipped {
		if at := jsonPath(t, c, path); isEmptyJSON(at) {
			t.Fatalf("the claim lacks %s, so the check proves nothing", path)
		}
	}
	lean, err := leanClaim(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range claimwatch.Skipped {
		if at := jsonPath(t, lean, path); !isEmptyJSON(at) {
			t.Errorf("leanClaim keeps %s (%v), which claimwatch does not decode", path, at)
		}
	}
}

// jsonPath is the value at a dotted path of obj's JSON, nil where absent.
func jsonPath(t *testing.T, obj any, path string) any {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var at any
	if err := json.Unmarshal(b, &at); err != nil {
		t.Fatal(err)
	}
	for _, k := range strings.Split(path, ".") {
		m, _ := at.(map[string]any)
		at = m[k]
	}
	return at
}

// isEmptyJSON: absent, or an empty object (spec.resources is a struct).
func isEmptyJSON(v any) bool {
	m, ok := v.(map[string]any)
	return v == nil || ok && len(m) == 0
}

// Karpenter's status churn on a NodeClaim does not enqueue a pass; a change
// a fact reads does.
func TestClaimChangeMatters(t *testing.T) {
	deleted := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	base := func() *karpv1.NodeClaim {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1", DeletionTimestamp: &metav1.Time{Time: deleted}}}
		c.Status.NodeName, c.Status.ProviderID = "n", "kwok://n"
		c.Status.Conditions = []status.Condition{{Type: "Ready", Status: metav1.ConditionTrue}, {Type: "Consolidatable", Status: metav1.ConditionFalse}}
		return c
	}
	p := claimChangeMatters()
	for name, tc := range map[string]struct {
		change func(*karpv1.NodeClaim)
		want   bool
	}{
		"another condition flips": {func(c *karpv1.NodeClaim) { c.Status.Conditions[1].Status = metav1.ConditionTrue }, false},
		"lastPodEventTime":        {func(c *karpv1.NodeClaim) { c.Status.LastPodEventTime = metav1.Time{Time: time.Now()} }, false},
		"resourceVersion alone":   {func(c *karpv1.NodeClaim) { c.ResourceVersion = "2" }, false},
		"Ready flips":             {func(c *karpv1.NodeClaim) { c.Status.Conditions[0].Status = metav1.ConditionFalse }, true},
		"an annotation":           {func(c *karpv1.NodeClaim) { c.Annotations = map[string]string{"noderotation.io/state": "pending"} }, true},
		"a label":                 {func(c *karpv1.NodeClaim) { c.Labels = map[string]string{"karpenter.sh/nodepool": "p"} }, true},
		"deletion":                {func(c *karpv1.NodeClaim) { c.DeletionTimestamp = &metav1.Time{Time: time.Now()} }, true},
		"finalizers":              {func(c *karpv1.NodeClaim) { c.Finalizers = []string{"karpenter.sh/termination"} }, true},
		"node name":               {func(c *karpv1.NodeClaim) { c.Status.NodeName = "m" }, true},
		"allocatable": {func(c *karpv1.NodeClaim) {
			c.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		}, true},
		"spec": {func(c *karpv1.NodeClaim) { c.Spec.ExpireAfter = karpv1.MustParseNillableDuration("1h") }, true},
		"requirements": {func(c *karpv1.NodeClaim) {
			c.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"z2"}}}
		}, true},
		"provider ID": {func(c *karpv1.NodeClaim) { c.Status.ProviderID = "kwok://m" }, true},
		"the same deletion instant, decoded apart": {func(c *karpv1.NodeClaim) {
			c.DeletionTimestamp = &metav1.Time{Time: deleted}
		}, false},
	} {
		n := base()
		tc.change(n)
		if got := p.Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: n}); got != tc.want {
			t.Errorf("%s: enqueues %v, want %v", name, got, tc.want)
		}
	}
}

// A surge claim's launch failure enqueues a pass: the fail-fast fact reads
// it (surge.LaunchFailure), and the cache keeps a Launched condition that
// is not True for it. The claims go through the cache's transform first,
// as the predicate sees them.
func TestClaimChangeMattersSeesALaunchFailure(t *testing.T) {
	launched := func(st metav1.ConditionStatus, reason, msg string, at time.Time) *karpv1.NodeClaim {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "surge", ResourceVersion: "1"}}
		c.Status.Conditions = []status.Condition{{Type: "Ready", Status: metav1.ConditionUnknown},
			{Type: karpv1.ConditionTypeLaunched, Status: st, Reason: reason, Message: msg, LastTransitionTime: metav1.Time{Time: at}}}
		lean, err := leanClaim(c)
		if err != nil {
			t.Fatal(err)
		}
		return lean.(*karpv1.NodeClaim)
	}
	t0, t1 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 10, 0, 5, 0, time.UTC)
	awaiting := launched(metav1.ConditionUnknown, "AwaitingReconciliation", "", t0)
	failed := launched(metav1.ConditionFalse, "LaunchFailed", "creating instance: no capacity in z1", t1)
	p := claimChangeMatters()
	for name, tc := range map[string]struct {
		old, new *karpv1.NodeClaim
		want     bool
	}{
		"the launch fails":             {awaiting, failed, true},
		"only the reason changes":      {awaiting, launched(metav1.ConditionUnknown, "LaunchFailed", "", t1), true},
		"another failure's text":       {failed, launched(metav1.ConditionFalse, "LaunchFailed", "creating instance: quota exceeded", t1), true},
		"the retry launches":           {failed, launched(metav1.ConditionTrue, "Launched", "", t1), true},
		"launched, then churn":         {launched(metav1.ConditionTrue, "Launched", "", t0), launched(metav1.ConditionTrue, "Launched", "", t1), false},
		"the same failure, re-stamped": {failed, launched(metav1.ConditionFalse, "LaunchFailed", "creating instance: no capacity in z1", t0), false},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: enqueues %v, want %v", name, got, tc.want)
		}
	}
}

// BenchmarkClaimChangeMatters is the predicate on a status-only update of
// a claim as the cache holds it (leanClaim's output): what every NodeClaim
// status update Karpenter writes costs before it is dropped
// (docs/performance.md).
func BenchmarkClaimChangeMatters(b *testing.B) {
	claim := func() *karpv1.NodeClaim {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "scale-00001", ResourceVersion: "1",
			Labels:      map[string]string{karpv1.NodePoolLabelKey: "scale-01"},
			Annotations: map[string]string{"karpenter.sh/nodepool-hash": "6821555240594823858", "karpenter.sh/nodepool-hash-version": "v3"},
			Finalizers:  []string{"karpenter.sh/termination"}}}
		c.Spec.ExpireAfter = karpv1.MustParseNillableDuration("720h")
		c.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
		for _, kv := range [][2]string{{karpv1.NodePoolLabelKey, "scale-01"}, {corev1.LabelInstanceTypeStable, "c-4x-amd64-linux"},
			{corev1.LabelOSStable, "linux"}, {corev1.LabelArchStable, "amd64"}, {karpv1.CapacityTypeLabelKey, "on-demand"}} {
			c.Spec.Requirements = append(c.Spec.Requirements, karpv1.NodeSelectorRequirementWithMinValues{Key: kv[0], Operator: corev1.NodeSelectorOpIn, Values: []string{kv[1]}})
		}
		c.Status.NodeName, c.Status.ProviderID = "kwok-scale-00001", "kwok://kwok-scale-00001"
		c.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3900m"), corev1.ResourceMemory: resource.MustParse("8182Mi"),
			corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"), corev1.ResourcePods: resource.MustParse("64")}
		c.Status.Conditions = []status.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
		return c
	}
	old, updated := claim(), claim()
	updated.ResourceVersion = "2"
	p := claimChangeMatters()
	e := event.UpdateEvent{ObjectOld: old, ObjectNew: updated}
	b.ReportAllocs()
	for b.Loop() {
		if p.Update(e) {
			b.Fatal("a status-only update enqueues a pass")
		}
	}
}
