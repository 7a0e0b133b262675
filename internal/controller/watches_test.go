package controller

import (
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	"github.com/noderotation/node-rotation-controller/internal/cache"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

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
		lean, err := cache.LeanClaim(c)
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
// a claim as the cache holds it (cache.LeanClaim's output): what every NodeClaim
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
