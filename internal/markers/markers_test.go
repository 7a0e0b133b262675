package markers

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	_ "github.com/noderotation/node-rotation-controller/internal/golden"
)

func node(labels, ann map[string]string, cordoned bool) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels, Annotations: ann}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
}

func TestMarkedAndReverse(t *testing.T) {
	// fresh maps per case: Reverse changes the node's own maps
	pair := func() map[string]string { return map[string]string{v1alpha1.LabelSurgeFor: "c"} }
	ours := func() map[string]string {
		return map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true", v1alpha1.AnnotationDoNotDisruptOwned: "true"}
	}
	cases := []struct {
		name          string
		n             *corev1.Node
		marked        bool
		did           string
		dnd           string // do-not-disrupt left
		unschedulable bool
	}{
		{"nothing of ours", node(nil, nil, false), false, "", "", false},
		{"an operator's own do-not-disrupt and cordon", node(nil, map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true"}, true), false, "", "true", true},
		{"paired only", node(pair(), nil, false), true, "unfroze", "", false},
		{"frozen by us", node(pair(), ours(), false), true, "unfroze", "", false},
		{"paired, the operator's do-not-disrupt", node(pair(), map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true"}, false), true, "unfroze", "true", false},
		{"cordoned by us", node(nil, map[string]string{v1alpha1.AnnotationCordoned: "true"}, true), true, "uncordoned", "", false},
		{"both", node(pair(), map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true", v1alpha1.AnnotationDoNotDisruptOwned: "true", v1alpha1.AnnotationCordoned: "true"}, true), true, "unfroze and uncordoned", "", false},
	}
	for _, c := range cases {
		if got := Marked(c.n); got != c.marked {
			t.Errorf("%s: Marked %v, want %v", c.name, got, c.marked)
		}
		if got := Reverse(c.n); got != c.did {
			t.Errorf("%s: Reverse said %q, want %q", c.name, got, c.did)
		}
		if c.n.Annotations[v1alpha1.KarpenterDoNotDisrupt] != c.dnd || c.n.Spec.Unschedulable != c.unschedulable || c.n.Labels[v1alpha1.LabelSurgeFor] != "" {
			t.Errorf("%s: after Reverse %v %v unschedulable %v", c.name, c.n.Labels, c.n.Annotations, c.n.Spec.Unschedulable)
		}
		if Marked(c.n) {
			t.Errorf("%s: still marked after Reverse", c.name)
		}
	}
}

func TestInFlightAndRecordFailure(t *testing.T) {
	for state, want := range map[string]bool{"": false, "pending": true, "draining": true, "failed": false, "expired": false} {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{v1alpha1.AnnotationState: state}}}
		if InFlight(c) != want {
			t.Errorf("InFlight(%q) = %v", state, !want)
		}
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for raw, want := range map[string]string{"": "1", "2": "3", "garbage": "1", "-4": "1"} {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			v1alpha1.AnnotationState: "pending", v1alpha1.AnnotationStartedAt: "x", v1alpha1.AnnotationSurgeClaim: "s", v1alpha1.AnnotationRetryCount: raw,
			v1alpha1.AnnotationFailureReason: "Unschedulable", v1alpha1.AnnotationRotateNext: "true"}}}
		RecordFailure(c, now)
		a := c.Annotations
		if a[v1alpha1.AnnotationState] != "failed" || a[v1alpha1.AnnotationFailedAt] != "2026-11-30T12:00:00Z" || a[v1alpha1.AnnotationRetryCount] != want {
			t.Errorf("retry-count %q: %v", raw, a)
		}
		if _, ok := a[v1alpha1.AnnotationStartedAt]; ok {
			t.Errorf("started-at kept: %v", a)
		}
		if _, ok := a[v1alpha1.AnnotationSurgeClaim]; ok {
			t.Errorf("surge-claim kept: %v", a)
		}
		if _, ok := a[v1alpha1.AnnotationFailureReason]; ok {
			t.Errorf("an earlier attempt's failure-reason kept: %v", a)
		}
		if _, ok := a[v1alpha1.AnnotationRotateNext]; ok {
			t.Errorf("rotate-next kept after the attempt it asked for: %v", a)
		}
	}
	bare := &karpv1.NodeClaim{}
	RecordFailure(bare, now)
	if bare.Annotations[v1alpha1.AnnotationRetryCount] != "1" {
		t.Errorf("a claim without annotations: %v", bare.Annotations)
	}
}
