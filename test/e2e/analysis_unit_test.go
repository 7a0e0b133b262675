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

	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// These run without a cluster (go test -tags e2e -run 'TestLongestPending|TestRotatedAway' ./test/e2e/):
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
