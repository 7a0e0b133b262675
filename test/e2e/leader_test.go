//go:build e2e

package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
)

// Two replicas with leader election; the leader is SIGKILLed while its
// rotation's surge is pending (no Lease release: it dies as on a node
// loss). The follower takes the Lease once it expires and finishes the
// rotation from the state in the cluster, announcing it once.
var _ = Describe("leader SIGKILLed mid-rotation", Label("leader"), Ordered, func() {
	ctx := context.Background()
	s := newScenario("leader-e2e", fixtures.RotationPool("leader-e2e"), 4, 1)
	var replicas []*controller

	BeforeAll(func() {
		installPrerequisites(ctx)
		s.setUp(ctx)
		for _, name := range []string{"leader-a", "leader-b"} {
			replicas = append(replicas, startController(name, "-leader-elect=true", "-leader-election-id=e2e-leader"))
		}
	})

	It("lets the follower finish the rotation the killed leader started", func() {
		var leader, follower *controller
		Eventually(func() bool {
			for i, r := range replicas {
				if len(r.LogLines("Successfully acquired lease")) > 0 {
					leader, follower = r, replicas[1-i]
					return true
				}
			}
			return false
		}).WithTimeout(time.Minute).Should(BeTrue(), "one replica leads")
		s.govern(ctx, "30s", func(p *v1alpha1.RotationPolicy) { p.Spec.Surge.CooldownAfter = "1h" })
		claim := s.awaitRotation(ctx, 2*time.Minute, "a rotation is pending", pending(ctx))
		leader.Kill()
		killed := time.Now()
		GinkgoWriter.Printf("leader %s SIGKILLed with %s pending\n", leader.Log, claim)

		Eventually(func() []string { return follower.LogLines("Successfully acquired lease") }).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		GinkgoWriter.Printf("follower leads %s after the kill\n", time.Since(killed).Round(time.Second))
		Eventually(gone(ctx, claim)).WithTimeout(4*time.Minute).Should(Satisfy(notFound), "the follower finishes the rotation")
		Eventually(func() int { return follower.completions(claim) }).WithTimeout(time.Minute).Should(Equal(1))
		Expect(leader.completions(claim)).To(BeZero(), "the leader died before the completion")
		// the Event is sent after the log line, by the recorder's broadcaster
		Eventually(func() int { return events(ctx, "RotationCompleted", s.name) }).WithTimeout(30 * time.Second).Should(Equal(1))
		Expect(createdClaims(s.rec, s.name, s.originals)).To(HaveLen(1), "one surge NodeClaim across both replicas")
		Consistently(poolAnnotations(ctx, s.name)).WithTimeout(5*time.Second).
			ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation), "cooldownAfter holds the next start")
		s.expectSettled(ctx, replicas, []string{claim}, 0)
	})
})
