package rotation_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// A claim Karpenter expires with no rotation of it in flight is counted
// once — across the world's racing instances and a controller started
// after the count — and named in one ExpiredUnrotated Warning with the
// class it was in (docs/design.md#coverage). One that expires mid-rotation
// stays an expired rotation.
var _ = Describe("a claim lost to Karpenter's expiry", func() {
	// expire waits out the claim's expireAfter, then deletes it as
	// Karpenter's expiration does: its deletionTimestamp at or after
	// creation + expireAfter (the fake Karpenter's finalizer holds it).
	expire := func(name string, after time.Duration) {
		GinkgoHelper()
		c := getClaim(name)
		time.Sleep(time.Until(c.CreationTimestamp.Add(after + time.Second)))
		Expect(env.Client.Delete(ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
	}

	It("is counted once, with a Warning naming the claim, its deadline and its last class, and not again by a controller started after", func() {
		const pool, old = "lost", "lost-old"
		createClaim(fk.Claim{Pool: pool, Name: old, Zone: "zone-a", ExpireAfter: "3s"})
		createPoolWith(pool, poolOptions{closedWindow: true, outstanding: true})
		By("Karpenter expiring the claim while the window is closed")
		expire(old, 3*time.Second)
		Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationExpiredUnrotated, ContainSubstring(old+"@")))
		Eventually(eventCount(pool, "ExpiredUnrotated"), timeout).Should(BeNumerically("==", 1))
		Eventually(scrape("noderotation_expired_unrotated_total", series(pool)), timeout).Should(Equal(1.0))
		msg := eventMessages(pool, "ExpiredUnrotated")
		deadline := getClaim(old).CreationTimestamp.Add(3 * time.Second).UTC().Format(time.RFC3339)
		Expect(msg).To(ConsistOf(And(ContainSubstring(old), ContainSubstring(deadline), ContainSubstring("class candidate"), ContainSubstring("window was closed"))))
		assertsTransition(pool, "coverage.lost")

		By("a controller process started after the count: the pool's record keeps it from counting again")
		before := coverage.passed(pool, "governed")()
		set := startInstances(env, "after-loss", 1, false, "")
		Eventually(coverage.passed(pool, "governed"), timeout).Should(Equal(before+1), "the new instance decided on the pool")
		Consistently(func() []any {
			return []any{eventCount(pool, "ExpiredUnrotated")(), scrape("noderotation_expired_unrotated_total", series(pool))()}
		}, 3*time.Second).Should(Equal([]any{int32(1), 1.0}))
		set.stop()
		assertsTransition(pool, "coverage.kept")
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
	})

	It("is not counted when it expires mid-rotation: that is an expired rotation", func() {
		const pool, old = "lost-mid", "lost-mid-old"
		createClaim(fk.Claim{Pool: pool, Name: old, Zone: "zone-a", ExpireAfter: "3s"})
		createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "5m"}, nil)
		Eventually(placeholderExists(old), timeout).Should(BeTrue(), "a pending rotation")
		expire(old, 3*time.Second)
		Eventually(scrape("noderotation_completed_total", series(pool, "outcome", "expired")), timeout).Should(Equal(1.0))
		Consistently(func() []any {
			return []any{eventCount(pool, "ExpiredUnrotated")(), scrape("noderotation_expired_unrotated_total", series(pool))(), getPool(pool).Annotations[v1alpha1.AnnotationExpiredUnrotated]}
		}, 3*time.Second).Should(Equal([]any{int32(0), 0.0, ""}), "the counter starts at 0 with the governed pool, and stays there")
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
	})
})
