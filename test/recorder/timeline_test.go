package recorder

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

func TestTimelineShowsThePoolsRotationAndSkipsTheRest(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	pool := func(rv int64, anchor string) Record {
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{}}}
		if anchor != "" {
			np.Annotations[v1alpha1.AnnotationActiveRotation] = anchor
		}
		return Record{RV: rv, Kind: "NodePool", Type: watch.Modified, Obj: np, Seen: t0.Add(time.Duration(rv) * time.Second)}
	}
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1", Labels: map[string]string{karpv1.NodePoolLabelKey: "p"},
		DeletionTimestamp: &metav1.Time{Time: t0}}, Status: karpv1.NodeClaimStatus{NodeName: "n1"}}
	other := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Labels: map[string]string{karpv1.NodePoolLabelKey: "q"}}}
	placeholder := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-c1", Namespace: "ctrl",
		Labels: map[string]string{v1alpha1.LabelNodePool: "p", v1alpha1.LabelSurgeFor: "c1"}}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	rec := Of(
		pool(1, ""), // before sinceRV: left out
		pool(2, "c1"),
		pool(3, "c1"), // nothing of a rotation changed: skipped
		Record{RV: 4, Kind: "Pod", Type: watch.Added, Obj: placeholder, Seen: t0.Add(4 * time.Second)},
		Record{RV: 5, Kind: "Node", Type: watch.Modified, Obj: other, Seen: t0.Add(5 * time.Second)},
		Record{RV: 6, Kind: "NodeClaim", Type: watch.Modified, Obj: claim, Seen: t0.Add(6 * time.Second)},
		pool(7, ""),
	)
	got := rec.Timeline(1, "p", "ctrl")
	lines := strings.Split(strings.TrimSpace(got), "\n")
	want := []string{
		"rv=2 MODIFIED NodePool/p active-rotation=c1",
		"rv=4 ADDED    Pod/nrc-surge-c1 nodepool=p surge-for=c1 phase=Pending",
		"rv=6 MODIFIED NodeClaim/c1 deleting node=n1",
		"rv=7 MODIFIED NodePool/p",
	}
	if len(lines) != len(want) {
		t.Fatalf("timeline has %d lines, want %d:\n%s", len(lines), len(want), got)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d = %q, want it to contain %q", i, lines[i], w)
		}
	}
	if !strings.HasPrefix(strings.TrimSpace(lines[0]), "0.0s") || !strings.Contains(lines[2], "4.0s") {
		t.Errorf("times are relative to the first record shown:\n%s", got)
	}
}
