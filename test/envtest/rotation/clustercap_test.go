package rotation_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// The cluster cap (docs/design.md#cluster-cap): with
// -max-concurrent-rotations 1, a second pool's due claim waits while the
// first pool's rotation is in flight (idle.cluster-cap), and starts once
// that rotation has ended.
var _ = Describe("the cluster cap", func() {
	It("holds a second pool's start while another rotation is in flight", func() {
		capRotations(1)
		const first, firstOld, second, secondOld = "capped-a", "capped-a-old", "capped-b", "capped-b-old"
		// the cap counts every pool's anchor: no other spec's pool may be left
		Eventually(poolsLeft, timeout).Should(BeEmpty(), "another spec's pool is left for the cap to count")
		startPending(first, firstOld)
		// both instances' caches show the first anchor before the second
		// pool exists (a watch event takes milliseconds)
		time.Sleep(time.Second)
		createClaim(fk.Claim{Pool: second, Name: secondOld, Zone: "zone-a"})
		createPool(second, v1alpha1.SurgeSpec{ReadyTimeout: "1h"}, nil)
		assertsTransition(second, "idle.cluster-cap")
		Consistently(poolAnnotations(second), 3*time.Second).ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation), "one rotation in flight: the cap is reached")
		By("the first rotation ending (its pool leaves governance and rolls back)")
		losePolicy(first)
		Eventually(noRotationKeys(first), timeout).Should(BeEmpty())
		pokePool(second)
		Eventually(poolAnnotations(second), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, secondOld))
	})
})

// capRotations sets every instance's -max-concurrent-rotations to n for the
// spec, and lifts it after.
func capRotations(n int) {
	for _, c := range mainWorld.instances.caps {
		c.SetMax(n)
	}
	DeferCleanup(func() {
		for _, c := range mainWorld.instances.caps {
			c.SetMax(0)
		}
	})
}
