package inspect

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/inspect/inspecttest"
	"github.com/noderotation/node-rotation-controller/internal/prepull"
)

// prePullCluster is the scripted cluster with busy-a draining under a policy
// that pre-pulls (timeout 5m), draining-at two minutes ago, and its
// pre-pull Pod running one image; edit changes the pool.
func prePullCluster(t *testing.T, edit func(*karpv1.NodePool)) (objs []client.Object, drainingAt time.Time) {
	t.Helper()
	drainingAt = now.Add(-2 * time.Minute)
	objs = withClaim(t, "busy-a", func(c *karpv1.NodeClaim) { c.Annotations[v1alpha1.AnnotationState] = v1alpha1.StateDraining })
	for _, o := range objs {
		switch o := o.(type) {
		case *v1alpha1.RotationPolicy:
			if o.Name == "open" {
				o.Spec.PrePull = v1alpha1.PrePullSpec{Enabled: true, Timeout: "5m"}
			}
		case *corev1.Pod:
			if o.Name == "nrc-surge-busy-a" {
				o.UID = "placeholder-uid"
			}
		case *karpv1.NodePool:
			if o.Name == "busy" {
				o.Annotations[v1alpha1.AnnotationActiveRotationState] = v1alpha1.StateDraining
				o.Annotations[v1alpha1.AnnotationDrainingAt] = drainingAt.UTC().Format(time.RFC3339)
				edit(o)
			}
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: inspecttest.Namespace, Name: prepull.PodName("busy-a"),
		Labels:          map[string]string{v1alpha1.LabelPrePullFor: "busy-a", v1alpha1.LabelManagedBy: v1alpha1.ManagedBy},
		Annotations:     map[string]string{"noderotation.io/prepull-skipped-images": `[{"image":"example.com/cached:2","fate":"present"}]`},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "nrc-surge-busy-a", UID: "placeholder-uid"}}}}
	pod.Spec.NodeName = "node-busy-surge"
	pod.Spec.Containers = []corev1.Container{{Name: "image-1", Image: "example.com/app:1"}, {Name: "image-2", Image: "example.com/sidecar:3"}}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "image-1", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		{Name: "image-2", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "403 Forbidden"}}},
	}
	return append(objs, pod), drainingAt
}

// While its pre-pull phase runs, the draining rotation is bounded by
// prePull.timeout from draining-at, as the table counts it.
func TestExplainGivesThePrePullBound(t *testing.T) {
	objs, drainingAt := prePullCluster(t, func(*karpv1.NodePool) {})
	ex, err := inspector(t, objs...).ExplainClaim(context.Background(), "busy-a")
	if err != nil {
		t.Fatal(err)
	}
	bound := drainingAt.Add(5 * time.Minute)
	if ex.PhaseBounded != "prePull.timeout" || !ex.PhaseBound.Equal(bound) {
		t.Errorf("phase bound %s %v; want prePull.timeout %v", ex.PhaseBounded, ex.PhaseBound, bound)
	}
	if want := "the drain starts when the pre-pull Pod ends, at the latest at 2026-12-01T12:03:00Z (prePull.timeout)"; !strings.Contains(ex.Reason, want) {
		t.Errorf("reason %q; want it to say %q", ex.Reason, want)
	}
	if f := ex.Pool.InFlight; f == nil || f.Phase != "draining.prepull" || f.Bounded != "prePull.timeout" {
		t.Errorf("status in flight %+v", f)
	}
}

// explain lists each image of the phase with its fate: the Pod's, as
// their containers say, then those it skipped and why.
func TestExplainListsEachImageAndItsFate(t *testing.T) {
	objs, _ := prePullCluster(t, func(*karpv1.NodePool) {})
	out := explained(t, objs)
	columns := regexp.MustCompile(`(\S)  +`) // the table's padding, whatever its width
	got := columns.ReplaceAllString(out, "$1 | ")
	for _, want := range []string{
		"\nPre-pull | 3 images: 1 pulled, 1 retrying, 1 present\n",
		"\n  example.com/app:1 | pulled\n",
		"\n  example.com/sidecar:3 | retrying (ErrImagePull: 403 Forbidden)\n",
		"\n  example.com/cached:2 | present\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("explain:\n%s\nlacks %q", out, want)
		}
	}
}

// Once the phase ended, the Pod is gone: explain shows the record the
// pool keeps, or why it cannot be read.
func TestExplainShowsThePhasesRecordOnceItEnded(t *testing.T) {
	record := v1alpha1.PrePullRecord{Ended: v1alpha1.PrePullFailed, Wait: 40 * time.Second, Pulled: 1, Failed: 1, Skipped: 1}
	for raw, want := range map[string]string{
		record.String(): "ended failed after 40s: 1 pulled, 1 failed, 0 unfinished, 1 skipped",
		`{"ended":"x"}`: "NodePool busy: annotation noderotation.io/prepull: wait",
	} {
		objs, _ := prePullCluster(t, func(p *karpv1.NodePool) { p.Annotations[v1alpha1.AnnotationPrePull] = raw })
		out := explained(t, objs)
		if !strings.Contains(out, want) || strings.Contains(out, "example.com/app:1") {
			t.Errorf("explain:\n%s\nwant %q and no image of the deleted Pod's", out, want)
		}
	}
}

// explained is busy-a's explanation among objs, rendered as a table.
func explained(t *testing.T, objs []client.Object) string {
	t.Helper()
	ex, err := inspector(t, objs...).ExplainClaim(context.Background(), "busy-a")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := RenderClaim(&out, ex, "table"); err != nil {
		t.Fatal(err)
	}
	return out.String()
}
