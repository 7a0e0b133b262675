//go:build e2e

package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/test/fixtures"
)

// The controller against real Karpenter (kwok provider, node boot delay):
// every original node rotated make-before-break, serially, with exactly one
// NodeClaim created per rotation and no Pod pending longer than the drain.
var _ = Describe("graceful rotation on real Karpenter", Label("rotation"), Ordered, func() {
	ctx := context.Background()
	s := newScenario("rotation-e2e", fixtures.RotationPool("rotation-e2e"), 8, 1)
	var ctrl *controller

	BeforeAll(func() {
		installPrerequisites(ctx)
		s.setUp(ctx)
		ctrl = startController("rotation")
	})

	// Karpenter's kwok provider sizes a node to the requests that made it,
	// so how many nodes eight Pods get depends on how Karpenter batched
	// them: four when they come in one batch, more otherwise.
	It("starts with the Deployment on four nodes or more", func() {
		Expect(len(s.originals)).To(BeNumerically(">=", 4))
	})

	It("rotates every original node once a policy governs the pool", func() {
		s.govern(ctx, "45s", nil)
		for _, name := range s.originals {
			// Only NotFound means the claim is gone: any other error (a
			// timeout, a throttled or refused request) says nothing about it.
			Eventually(gone(ctx, name)).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(Satisfy(notFound), "original NodeClaim %s rotated away", name)
		}
		By("stopping further rotations and letting any in flight finish")
		s.pause(ctx, 3*time.Minute)
		Eventually(func() int { return healthyPods(ctx, s.name, s.app) }).WithTimeout(time.Minute).Should(Equal(int(s.replicas)))
	})

	It("rotated make-before-break, serially, with one NodeClaim per rotation and no Pod pending longer than the drain", func() {
		rotations := rotationsOf(s.rec, s.name)
		Expect(len(rotations)).To(BeNumerically(">=", len(s.originals)))
		for _, name := range s.originals {
			Expect(rotations).To(HaveKey(name))
		}
		for claim, r := range rotations {
			GinkgoWriter.Printf("rotation %s: surge node %s Ready rv %d, old claim deleted rv %d, drain %s, NodeClaims created %v\n",
				claim, r.surgeNode, r.surgeReadyRV, r.deleteRV, r.drain.Round(10*time.Millisecond), r.created)
			Expect(r.surgeReadyRV).NotTo(BeZero(), "rotation %s: the surge node became Ready", claim)
			Expect(r.surgeReadyRV).To(BeNumerically("<", r.deleteRV), "rotation %s: replacement Ready before the old claim's deletionTimestamp", claim)
			Expect(r.created).To(HaveLen(1), "rotation %s: Karpenter created exactly one NodeClaim", claim)
		}
		Expect(maxInFlight(s.rec, s.name)).To(Equal(1), "at most one rotation in flight per pool")
		longestDrain, firstStart := time.Duration(0), int64(0)
		for _, r := range rotations {
			longestDrain = max(longestDrain, r.drain)
			if firstStart == 0 || r.startRV < firstStart {
				firstStart = r.startRV
			}
		}
		pending, pods := longestPending(s.rec, s.name, firstStart, time.Now())
		GinkgoWriter.Printf("longest Pod pending %s over %d Pods created during the rotations, longest drain %s\n",
			pending.Round(10*time.Millisecond), pods, longestDrain.Round(10*time.Millisecond))
		Expect(pods).To(BeNumerically(">", 0), "the drains evicted Pods, so their replacements were created during the rotations: none seen means the bound below is vacuous")
		Expect(pending).To(BeNumerically("<=", longestDrain+time.Second))
		s.expectSettled(ctx, []*controller{ctrl}, s.originals, 0)
	})
})

func poolOf(ctx context.Context, name string) *karpv1.NodePool {
	np := &karpv1.NodePool{}
	Expect(kube.Get(ctx, client.ObjectKey{Name: name}, np)).To(Succeed())
	return np
}
