package controller

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
)

// waitingPlaceholder is general-a's placeholder, unbound for age.
func waitingPlaceholder(age time.Duration) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nrc-surge-general-a", UID: "ph-uid",
		CreationTimestamp: metav1.NewTime(now.Add(-age)),
		Labels:            map[string]string{v1alpha1.LabelSurgeFor: "general-a", v1alpha1.LabelNodePool: "general"}}}
	p.Spec.Containers = []corev1.Container{{Name: "pause", Image: "example.com/pause:1"}}
	p.Status.Phase = corev1.PodPending
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available"}}
	return p
}

// karpenterRefusal is the FailedScheduling Event Karpenter v1.13 records on
// a Pod no NodePool can launch a node for.
func karpenterRefusal() *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nrc-surge-general-a.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "nrc-surge-general-a", UID: "ph-uid"},
		Reason:         "FailedScheduling", Type: corev1.EventTypeWarning, Source: corev1.EventSource{Component: "karpenter"},
		Message: `Failed to schedule pod, all available instance types exceed limits for nodepool: "general"`}
}

// Karpenter said it cannot serve the placeholder, two minutes into a 15m
// readyTimeout: the attempt is rolled back now, the claim records reason
// Unschedulable, and SurgeUnschedulable, the failure line and RotationFailed
// carry it — each once.
func TestFailFastOnKarpenterRefusal(t *testing.T) {
	before := counterValue(t, "general", "failure")
	w := newWorld(t, nil, nodePool("general", v1alpha1.AnnotationActiveRotation, "general-a"), governing(),
		nodeClaim("general-a", 40*time.Minute, "node-a", v1alpha1.AnnotationState, "pending", v1alpha1.AnnotationStartedAt, stamp(now.Add(-2*time.Minute))),
		node("node-a"), waitingPlaceholder(2*time.Minute), karpenterRefusal())
	w.reconcile(t, "general")
	if want := []string{"pending.surge-unservable", "window.open.stamped", "coverage.kept"}; !reflect.DeepEqual(w.transitions(), want) {
		t.Fatalf("decisions %v, want %v", w.transitions(), want)
	}
	c := get(t, w.api, "general-a", "", &karpv1.NodeClaim{})
	if c.Annotations[v1alpha1.AnnotationState] != v1alpha1.StateFailed || c.Annotations[v1alpha1.AnnotationFailureReason] != "Unschedulable" ||
		c.Annotations[v1alpha1.AnnotationRetryCount] != "1" {
		t.Errorf("claim annotations %v", c.Annotations)
	}
	np := get(t, w.api, "general", "", &karpv1.NodePool{})
	if _, ok := np.Annotations[v1alpha1.AnnotationActiveRotation]; ok || np.Annotations[v1alpha1.AnnotationLastFailureAt] != stamp(now) {
		t.Errorf("pool annotations %v", np.Annotations)
	}
	if err := w.api.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "nrc-surge-general-a"}, &corev1.Pod{}); err == nil {
		t.Error("the placeholder was not deleted")
	}
	events := w.rec.drain()
	if len(events) != 2 || events[0] != `Warning SurgeUnschedulable placeholder nrc-surge-general-a: Unschedulable: Failed to schedule pod, all available instance types exceed limits for nodepool: "general"` ||
		!strings.HasPrefix(events[1], "Warning RotationFailed Unschedulable: Karpenter cannot provision the surge") {
		t.Errorf("events %q", events)
	}
	if l := w.linesWith("rotation attempt failed"); len(l) != 1 || l[0].kv["reason"] != "Unschedulable" {
		t.Errorf("failure lines %+v", l)
	}
	if got := counterValue(t, "general", "failure") - before; got != 1 {
		t.Errorf("completed_total{outcome=failure} +%v, want +1", got)
	}
}

// Inside the grace minute, and without Karpenter's word, the attempt waits.
func TestNoFailFastWithoutKarpenterRefusal(t *testing.T) {
	for name, objs := range map[string][]client.Object{
		"in the grace minute":        {waitingPlaceholder(40 * time.Second), karpenterRefusal()},
		"Karpenter has said nothing": {waitingPlaceholder(5 * time.Minute)},
	} {
		t.Run(name, func(t *testing.T) {
			all := append([]client.Object{nodePool("general", v1alpha1.AnnotationActiveRotation, "general-a"), governing(),
				nodeClaim("general-a", 40*time.Minute, "node-a", v1alpha1.AnnotationState, "pending", v1alpha1.AnnotationStartedAt, stamp(now.Add(-5*time.Minute))),
				node("node-a")}, objs...)
			w := newWorld(t, nil, all...)
			w.reconcile(t, "general")
			if want := []string{"pending.await-surge", "window.open.stamped", "coverage.kept"}; !reflect.DeepEqual(w.transitions(), want) {
				t.Fatalf("decisions %v, want %v", w.transitions(), want)
			}
		})
	}
}

// counterValue reads noderotation_completed_total for pool and outcome.
func counterValue(t *testing.T, pool, outcome string) float64 {
	t.Helper()
	var d dto.Metric
	if err := metrics.Completed.WithLabelValues(pool, outcome).Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}

// What a pass's steps earned is said also when a later step fails: the
// anchor clear after RotationFailed fails, the pass returns its error, and
// the failure written before it is announced, once (docs/design.md#announcements).
func TestAnnouncedWhenALaterStepFails(t *testing.T) {
	boom := errors.New("boom")
	before := counterValue(t, "general", "failure")
	poolPatchFails := &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if _, ok := obj.(*karpv1.NodePool); ok {
			return boom
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
	w := newWorld(t, poolPatchFails, nodePool("general", v1alpha1.AnnotationActiveRotation, "general-a"), governing(),
		nodeClaim("general-a", 40*time.Minute, "node-a", v1alpha1.AnnotationState, "pending", v1alpha1.AnnotationStartedAt, stamp(now.Add(-2*time.Minute))),
		node("node-a"), waitingPlaceholder(2*time.Minute), karpenterRefusal())
	_, err := w.r.Reconcile(context.Background(), request("general"))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "(anchor-clear)") {
		t.Fatalf("error %v, want the anchor clear's", err)
	}
	if c := get(t, w.api, "general-a", "", &karpv1.NodeClaim{}); c.Annotations[v1alpha1.AnnotationState] != v1alpha1.StateFailed {
		t.Fatalf("the failure write did not land: %v", c.Annotations)
	}
	events := w.rec.drain()
	if len(events) != 2 || !strings.HasPrefix(events[0], "Warning SurgeUnschedulable") || !strings.HasPrefix(events[1], "Warning RotationFailed Unschedulable") {
		t.Errorf("events %q, want SurgeUnschedulable and RotationFailed", events)
	}
	if got := counterValue(t, "general", "failure") - before; got != 1 {
		t.Errorf("completed_total{outcome=failure} +%v, want +1", got)
	}
}

// What a write earned is said before the cleanup after it is sent: when
// the rollback's anchor clear reaches the API server, its RotationFailed
// is already recorded, so a controller killed right after that clear has
// said it (docs/design.md#announcements).
func TestAnnouncedBeforeTheCleanupAfterIt(t *testing.T) {
	var w *world
	recordedAtClear := -1
	poolPatch := &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if np, ok := obj.(*karpv1.NodePool); ok && w != nil && np.Annotations[v1alpha1.AnnotationActiveRotation] == "" {
			w.rec.mu.Lock()
			recordedAtClear = len(w.rec.objs)
			w.rec.mu.Unlock()
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
	w = newWorld(t, poolPatch, nodePool("general", v1alpha1.AnnotationActiveRotation, "general-a"), governing(),
		nodeClaim("general-a", 40*time.Minute, "node-a", v1alpha1.AnnotationState, "pending", v1alpha1.AnnotationStartedAt, stamp(now.Add(-2*time.Minute))),
		node("node-a"), waitingPlaceholder(2*time.Minute), karpenterRefusal())
	w.reconcile(t, "general")
	if events := w.rec.drain(); len(events) != 2 || !strings.HasPrefix(events[1], "Warning RotationFailed") {
		t.Fatalf("events %q", events)
	}
	if recordedAtClear != 2 {
		t.Errorf("%d Events recorded when the anchor clear was sent, want SurgeUnschedulable and RotationFailed", recordedAtClear)
	}
}
