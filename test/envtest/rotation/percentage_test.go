package rotation_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// The base of a percentage (docs/design.md#percentage-base, issue #53):
// nine claims under maxUnavailable "34%" — 4 of 9, rounded up — and the
// four rotations' surge claims created, as Karpenter creates them, before
// any has a node. 34% of the 13 claims would be 5: measured on real
// Karpenter, a fifth rotation started 2 s after the first four. The surge
// claims are not the pool's, so the number in force stays 4 and no fifth
// rotation starts. (No surge is served: readyTimeout 1h holds the four
// pending; the surge claims carry an hour's skip-until, as in the
// throughput spec, so they are never candidates themselves.)
var _ = Describe("a percentage of a pool with its rotations' surge claims in it", func() {
	It("is of the nine claims, not thirteen: four rotations under 34%, never a fifth", func() {
		const pool = "pct"
		for i := range 9 {
			createClaim(fk.Claim{Pool: pool, Name: fmt.Sprintf("pct-%d", i), Zone: "zone-a"})
		}
		// The nine predate every rotation by a second at least: a claim
		// created in the second a rotation starts reads as its surge claim
		// (creation times and started-at have whole seconds; the base errs
		// low, docs/design.md#percentage-base), and with the surge claims
		// not launched yet three rotations would each take one of the nine
		// and hold the base at six (3 in force). Seen on a cold CI run,
		// where the first rotation started in the nine's own second.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
		// the NodePool's budget at the same 34%: ceil(34% of 9) = 4 for Karpenter
		// too, whose count leaves out the surge claims until they initialize
		createPoolWith(pool, poolOptions{surge: v1alpha1.SurgeSpec{MaxUnavailable: ptr.To(intstr.FromString("34%")), ReadyTimeout: "1h"}, pool: budget("34%")})
		inFlight := func() int { return len(v1alpha1.Anchors(getPool(pool).Annotations)) }
		By("waiting for four rotations, each with its placeholder")
		Eventually(inFlight, timeout).Should(Equal(4))
		for _, a := range v1alpha1.Anchors(getPool(pool).Annotations) {
			Eventually(placeholderExists(a.Claim), timeout).Should(BeTrue())
		}
		Eventually(scrape("noderotation_max_unavailable", series(pool)), timeout).Should(Equal(4.0))

		By("creating a surge claim per placeholder, none launched yet")
		skip := map[string]string{v1alpha1.AnnotationSkipUntil: rfc3339(time.Now().Add(time.Hour))}
		for i := range 4 {
			_, err := karpenter.LaunchClaim(ctx, fk.Claim{Pool: pool, Name: fmt.Sprintf("pct-s%d", i), Zone: "zone-a", Annotations: skip})
			Expect(err).NotTo(HaveOccurred())
		}
		By("never starting a fifth: the number in force is 4 of 9 nodes")
		Consistently(inFlight, 5*time.Second, 100*time.Millisecond).Should(Equal(4))
		Expect(scrape("noderotation_max_unavailable", series(pool))()).To(Equal(4.0))
		Expect(anchors.mostAnchored(pool)).To(Equal(4), "never a fifth anchor (every write of the pool seen)")
	})
})
