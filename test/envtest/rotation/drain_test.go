package rotation_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// doNotDisrupt runs a Pod on the claim's node that Karpenter's drain would
// wait on until the terminationGracePeriod (docs/design.md#drain-blockers).
func doNotDisrupt(claim string) {
	GinkgoHelper()
	_, err := karpenter.RunPod(ctx, workloadNS, claim+"-job", fk.NodeName(claim), "500m", func(p *corev1.Pod) {
		p.Annotations = map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true"}
	})
	Expect(err).NotTo(HaveOccurred())
}

// blockedEarliest creates pool with two due claims: <pool>-early, whose
// deadline is expireAfter away and whose node runs a do-not-disrupt Pod,
// and <pool>-late, eight hours from its deadline.
func blockedEarliest(pool, expireAfter string) {
	GinkgoHelper()
	createClaim(fk.Claim{Pool: pool, Name: pool + "-early", Zone: "zone-a", ExpireAfter: expireAfter})
	doNotDisrupt(pool + "-early")
	createClaim(fk.Claim{Pool: pool, Name: pool + "-late", Zone: "zone-a", ExpireAfter: "8h"})
	createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "5m"}, nil)
}

// The test pools take every claim older than a second (ageThreshold 1s),
// and a rotation's worst case here is readyTimeout 5m + tGP 1h + 2m, plus
// t_rot_est 5m + 10m ahead of it: a blocked claim is taken once its
// deadline is less than 1h22m away.
var _ = Describe("drain blockers", func() {
	It("passes over a claim whose node runs a do-not-disrupt Pod for one whose drain can proceed", func() {
		const pool = "drain-defer"
		blockedEarliest(pool, "4h")

		By("starting the claim with the later deadline")
		Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, pool+"-late"))
		assertsTransition(pool, "idle.start")
		Expect(claimAnnotations(pool + "-early")()).NotTo(HaveKey(v1alpha1.AnnotationState))
		Expect(eventCount(pool+"-early", "DrainBlocked")()).To(BeZero())

		By("counting the claim passed over by reason")
		Expect(scrape("noderotation_drain_blocked_nodes", series(pool, "reason", "do-not-disrupt"))()).To(Equal(1.0))
		Expect(scrape("noderotation_drain_blocked_nodes", series(pool, "reason", "pdb"))()).To(Equal(0.0))
	})

	It("takes a blocked claim when its deadline leaves no other choice, and says DrainBlocked naming the Pod once", func() {
		const pool = "drain-urgent"
		blockedEarliest(pool, "1h")

		Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, pool+"-early"))
		Eventually(claimAnnotations(pool+"-early"), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationState, "pending"))
		assertsTransition(pool, "idle.start-drain-blocked")
		Eventually(eventCount(pool+"-early", "DrainBlocked"), timeout).Should(BeNumerically("==", 1))
		Consistently(eventCount(pool+"-early", "DrainBlocked"), 2*time.Second).Should(BeNumerically("==", 1), "said once, by the pass whose anchor write started the rotation")
		Expect(eventMessages(pool+"-early", "DrainBlocked")).To(ContainElement(ContainSubstring(workloadNS + "/" + pool + "-early-job (do-not-disrupt)")))
	})
})

// eventMessages lists the messages of the Events with reason about the
// object named name.
func eventMessages(name, reason string) []string {
	list := &corev1.EventList{}
	Expect(env.Client.List(ctx, list)).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}
