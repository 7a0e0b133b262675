//go:build e2e

package e2e_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/test/fixtures"
)

// An early force-expiry: the old NodeClaim is deleted by someone else (here
// by hand, as Karpenter's expireAfter or an operator would) while its
// surge is still pending. The rotation ends as expired, announced once; the
// placeholder goes and the pool's gate opens.
var _ = Describe("a claim force-expired while its rotation is pending", Label("expiry"), Ordered, func() {
	ctx := context.Background()
	s := newScenario("expiry-e2e", fixtures.RotationPool("expiry-e2e"), 4, 1)
	var ctrl *controller
	var deleted string

	BeforeAll(func() {
		installPrerequisites(ctx)
		s.setUp(ctx)
		ctrl = startController("expiry")
	})

	It("ends the rotation as expired, once, when the claim is deleted mid-pending", func() {
		s.govern(ctx, "30s", nil)
		claim := s.awaitRotation(ctx, 2*time.Minute, "a rotation is pending", pending(ctx))
		Expect(kube.Delete(ctx, &karpv1.NodeClaim{ObjectMeta: objectMeta(claim)})).To(Succeed())
		deleted = claim
		GinkgoWriter.Printf("deleted %s while pending\n", claim)

		Eventually(gone(ctx, claim)).WithTimeout(3*time.Minute).Should(Satisfy(notFound), "Karpenter drains the deleted claim")
		Eventually(func() int { return expiredCompletions(ctrl, claim) }).WithTimeout(time.Minute).Should(Equal(1))
		Expect(ctrl.metric("noderotation_completed_total", `nodepool="expiry-e2e"`, `outcome="expired"`)).To(Equal(1.0))
		Expect(ctrl.metric("noderotation_completed_total", `nodepool="expiry-e2e"`, `outcome="success"`)).To(BeNumerically("<=", 0), "an expiry is no success")
		Expect(events(ctx, "RotationCompleted", s.name)).To(BeZero())
		Eventually(anchorOf(ctx, s.name)).
			WithTimeout(time.Minute).ShouldNot(Equal(claim), "the gate opens")
	})

	It("leaves nothing behind once paused", func() {
		s.pause(ctx, 3*time.Minute)
		s.expectSettled(ctx, []*controller{ctrl}, []string{deleted}, 1)
		expired := 0
		for _, c := range s.originals {
			expired += expiredCompletions(ctrl, c)
		}
		Expect(expired).To(Equal(1), "one expiry, announced once")
	})
})

// expiredCompletions counts the run's "rotation complete" lines with
// outcome expired for claim.
func expiredCompletions(c *controller, claim string) int {
	n := 0
	for _, l := range c.LogLines(`"rotation complete"`) {
		if strings.Contains(l, claim) && strings.Contains(l, `"outcome":"expired"`) {
			n++
		}
	}
	return n
}
