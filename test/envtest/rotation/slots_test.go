package rotation_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// startTwoPending creates two due claims under maxUnavailable 2 (no
// surge is ever served: readyTimeout 1h holds both pending) and waits
// until both are anchored, one per slot, with their placeholders. It
// returns the claims in slot order.
func startTwoPending(pool string, claims ...string) (slot1, slot2 string) {
	GinkgoHelper()
	for _, c := range claims {
		createClaim(fk.Claim{Pool: pool, Name: c, Zone: "zone-a"})
	}
	createPoolWith(pool, poolOptions{surge: v1alpha1.SurgeSpec{MaxUnavailable: ptr.To(intstr.FromInt32(2)), ReadyTimeout: "1h"}, pool: budget("3")})
	s2 := v1alpha1.Slot(2).Key(v1alpha1.AnnotationActiveRotation)
	Eventually(poolAnnotations(pool), timeout).Should(And(HaveKey(v1alpha1.AnnotationActiveRotation), HaveKey(s2)))
	a := getPool(pool).Annotations
	slot1, slot2 = a[v1alpha1.AnnotationActiveRotation], a[s2]
	for _, c := range []string{slot1, slot2} {
		Eventually(placeholderExists(c), timeout).Should(BeTrue())
	}
	return slot1, slot2
}

// The recovery of one rotation's slot beside another in flight
// (docs/design.md#throughput): a stranded rotation goes to one slot only,
// never making more rotations than the number in force.
var _ = Describe("a lost or overwritten anchor beside another rotation", func() {
	It("re-adopts a pending rotation whose slot-2 anchor was removed into the free slot, before a due claim starts, with one Warning", func() {
		const pool, third = "lost-slot", "lost-slot-c"
		first, second := startTwoPending(pool, "lost-slot-a", "lost-slot-b")
		createClaim(fk.Claim{Pool: pool, Name: third, Zone: "zone-a"})
		By("waiting until the third claim is a candidate: a free slot would start it")
		Eventually(scrape("noderotation_candidates", series(pool)), timeout).Should(Equal(1.0))
		annotatePool(pool, map[string]string{v1alpha1.Slot(2).Key(v1alpha1.AnnotationActiveRotation): ""})
		By("writing the anchor back for the stranded claim, in the free slot")
		assertsTransition(pool, "idle.readopt")
		Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.Slot(2).Key(v1alpha1.AnnotationActiveRotation), second))
		Eventually(eventCount(pool, "AnchorRestored"), timeout).Should(BeNumerically("==", 1))
		By("never starting the due claim meanwhile, and leaving slot 1's rotation alone")
		Consistently(placeholderExists(third), 3*time.Second).Should(BeFalse())
		Expect(claimAnnotations(third)()).NotTo(HaveKey(v1alpha1.AnnotationState))
		Expect(getPool(pool).Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, first))
		for _, c := range []string{first, second} {
			Expect(claimAnnotations(c)()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "pending"), "the rotation of %s goes on", c)
		}
		Expect(anchors.mostAnchored(pool)).To(Equal(2), "never a third rotation")
		Expect(claimAnnotations(third)()).NotTo(HaveKey(v1alpha1.AnnotationState), "the due claim never started")
	})

	It("puts the live rotation in the place of slot 2's anchor naming a gone claim, leaving slot 1's rotation alone", func() {
		const pool, gone = "superseded-slot", "superseded-slot-gone"
		first, second := startTwoPending(pool, "superseded-slot-a", "superseded-slot-b")
		By("replacing slot 2's anchor with an older copy's: a claim long gone, with its draining mirror")
		anchors.expectOverwrite(pool, gone, second)
		annotatePool(pool, map[string]string{
			v1alpha1.Slot(2).Key(v1alpha1.AnnotationActiveRotation): gone, v1alpha1.Slot(2).Key(v1alpha1.AnnotationActiveRotationState): "draining"})
		assertsTransition(pool, "gone.superseded")
		Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.Slot(2).Key(v1alpha1.AnnotationActiveRotation), second))
		Eventually(eventCount(pool, "AnchorRestored"), timeout).Should(BeNumerically("==", 1))
		Expect(eventMessages(pool, "AnchorRestored")).To(ConsistOf(ContainSubstring("named NodeClaim " + gone + ", which is gone, while NodeClaim " + second + " was pending")))
		Expect(getPool(pool).Annotations).To(And(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, first),
			Not(HaveKey(v1alpha1.Slot(2).Key(v1alpha1.AnnotationLastRotationAt)))), "slot 1 untouched, no phantom success in slot 2")
		Consistently(scrape("noderotation_completed_total", series(pool, "outcome", "success")), 2*time.Second).Should(Equal(-1.0))
		Expect(eventCount(pool, "RotationCompleted")()).To(BeZero())
	})
})

// The cluster cap counts every anchored slot (docs/design.md#throughput):
// with -max-concurrent-rotations 2, a pool of maxUnavailable 3 with two
// rotations in flight starts no third.
var _ = Describe("the cluster cap with several rotations of a pool at once", func() {
	It("holds a pool's third start while two of its rotations are in flight and the cap is two", func() {
		capRotations(2)
		const pool, third = "capped-slots", "capped-slots-c"
		Eventually(poolsLeft, timeout).Should(BeEmpty(), "another spec's pool is left for the cap to count")
		startTwoPending(pool, "capped-slots-a", "capped-slots-b")
		editPolicy(pool, func(s *v1alpha1.RotationPolicySpec) { s.Surge.MaxUnavailable = ptr.To(intstr.FromInt32(3)) })
		createClaim(fk.Claim{Pool: pool, Name: third, Zone: "zone-a"})
		assertsTransition(pool, "idle.cluster-cap")
		Consistently(placeholderExists(third), 3*time.Second).Should(BeFalse(), "two rotations in flight: the cap is reached")
		Expect(anchors.mostAnchored(pool)).To(Equal(2))
	})
})

// editPolicy changes the spec of the policy named name.
func editPolicy(name string, edit func(*v1alpha1.RotationPolicySpec)) {
	GinkgoHelper()
	Eventually(func() error {
		p := &v1alpha1.RotationPolicy{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		edit(&p.Spec)
		return env.Client.Update(ctx, p)
	}, timeout).Should(Succeed())
}
