//go:build e2e

package e2e_test

import (
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// These run without a cluster (go test -tags e2e -run 'TestLongestPending|TestRotatedAway|TestRotationsOf' ./test/e2e/):
// they pin what the e2e analysis counts, so its bounds cannot pass by vacuity.

func pod(name string, rv int64, typ watch.EventType, phase corev1.PodPhase, seen time.Time) recorder.Record {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: corev1.PodStatus{Phase: phase}}
	return recorder.Record{RV: rv, Kind: "Pod", Type: typ, Obj: p, Seen: seen}
}

func TestLongestPendingCountsPodsThatNeverRan(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	rec := recorder.Of(
		pod("before", 5, watch.Added, corev1.PodPending, at(0)), // created before the rotations: not counted
		pod("ran", 11, watch.Added, corev1.PodPending, at(1)),
		pod("ran", 12, watch.Modified, corev1.PodRunning, at(4)), // 3s
		pod("deleted-pending", 13, watch.Added, corev1.PodPending, at(2)),
		pod("deleted-pending", 14, watch.Deleted, corev1.PodPending, at(9)), // 7s, never ran
		pod("stuck", 15, watch.Added, corev1.PodPending, at(5)),             // still pending at the end
	)
	longest, n := longestPending(rec, "ns", 10, at(25))
	if n != 3 || longest != 20*time.Second {
		t.Errorf("longestPending = %s over %d Pods; want 20s (the stuck Pod, pending until the end) over 3", longest, n)
	}
	rec = recorder.Of(pod("ran", 11, watch.Added, corev1.PodPending, at(1)), pod("deleted-pending", 13, watch.Added, corev1.PodPending, at(2)),
		pod("deleted-pending", 14, watch.Deleted, corev1.PodPending, at(9)))
	if longest, _ := longestPending(rec, "ns", 10, at(9)); longest != 8*time.Second {
		t.Errorf("longestPending = %s; want 8s (a Pod never seen Running counts until the end)", longest)
	}
}

func TestRotatedAwayIsNotFoundOnly(t *testing.T) {
	g := gomega.NewWithT(t)
	nodeclaims := schema.GroupResource{Group: "karpenter.sh", Resource: "nodeclaims"}
	g.Expect(apierrors.NewNotFound(nodeclaims, "old")).To(gomega.Satisfy(apierrors.IsNotFound))
	for _, err := range []error{nil, apierrors.NewServerTimeout(nodeclaims, "get", 1), apierrors.NewTooManyRequests("slow down", 1), apierrors.NewForbidden(nodeclaims, "old", nil)} {
		g.Expect(err).NotTo(gomega.Satisfy(apierrors.IsNotFound), "%v must not count as rotated away", err)
	}
}

// TestRotationsOfGivesEachRotationItsSurgeClaim: two rotations side by side
// whose placeholders land on each other's NodeClaims — Karpenter launched
// n1 for A's placeholder, n2 for B's, and the scheduler bound B's to n1's
// node, Ready first (a cold CI run saw it under load) — each still has
// exactly one NodeClaim created for it: the one behind its surge node. A
// claim no rotation's surge stands on counts against every rotation
// running when it was created.
func TestRotationsOfGivesEachRotationItsSurgeClaim(t *testing.T) {
	g := gomega.NewWithT(t)
	anchors := func(rv int64, claims ...string) recorder.Record {
		a := map[string]string{}
		for i, c := range claims {
			if c != "" {
				a[v1alpha1.Slot(i+1).Key(v1alpha1.AnnotationActiveRotation)] = c
			}
		}
		return recorder.Record{RV: rv, Kind: "NodePool", Type: watch.Modified, Obj: &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: a}}}
	}
	claim := func(name, node string, rv int64, typ watch.EventType) recorder.Record {
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "p"}}, Status: karpv1.NodeClaimStatus{NodeName: node}}
		return recorder.Record{RV: rv, Kind: "NodeClaim", Type: typ, Obj: nc}
	}
	surgeNode := func(name, surgeFor string, rv int64) recorder.Record {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "p", v1alpha1.LabelSurgeFor: surgeFor}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
		return recorder.Record{RV: rv, Kind: "Node", Type: watch.Modified, Obj: n}
	}
	swapped := []recorder.Record{
		anchors(10, "p-a"),
		claim("p-n1", "", 11, watch.Added), // for A's placeholder
		anchors(12, "p-a", "p-b"),
		claim("p-n2", "", 13, watch.Added), // for B's
		claim("p-n1", "node-1", 14, watch.Modified),
		claim("p-n2", "node-2", 15, watch.Modified),
		surgeNode("node-1", "p-b", 16), // B's placeholder took n1's node
		surgeNode("node-2", "p-a", 17),
		anchors(20, "", "p-b"),
		anchors(21),
	}
	got := rotationsOf(recorder.Of(swapped...), "p")
	g.Expect(got).To(gomega.HaveLen(2))
	g.Expect(got["p-a"].created).To(gomega.Equal([]string{"p-n2"}), "A's surge node stands on p-n2")
	g.Expect(got["p-b"].created).To(gomega.Equal([]string{"p-n1"}), "B's surge node stands on p-n1, created before B's anchor")

	extra := append(swapped[:len(swapped)-2:len(swapped)-2], claim("p-extra", "node-3", 18, watch.Added), anchors(20, "", "p-b"), anchors(21))
	got = rotationsOf(recorder.Of(extra...), "p")
	g.Expect(got["p-a"].created).To(gomega.ConsistOf("p-n2", "p-extra"), "a claim no surge stands on is an extra for A")
	g.Expect(got["p-b"].created).To(gomega.ConsistOf("p-n1", "p-extra"), "and for B, running when it was created")
}
