//go:build e2e

package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
)

// Several rotations of one pool at once on real Karpenter
// (docs/design.md#throughput): a twelve-node pool (24 replicas of 1.5
// cores on 4-core nodes: two on each, so no node has room for another
// node's placeholder) behind a PDB, maxUnavailable "30%" — 4 of 12,
// rounded up, of the pool without the rotations' own surge claims (with
// them, 30% of 16 would be 5: docs/design.md#percentage-base) — every
// original node rotated, four at a time and never five (the watch
// record's claim states, and a 1 s sample of placeholders and original
// claims deleting), each rotation with a surge NodeClaim of its own, the
// PDB never violated.
var _ = Describe("several rotations of a pool at once on real Karpenter", Label("throughput"), Ordered, func() {
	ctx := context.Background()
	pool := fixtures.RotationPool("throughput-e2e")
	// twelve nodes, four surges and room for a launch Karpenter retries
	pool.Spec.Limits[corev1.ResourceCPU] = resource.MustParse("80")
	// the pool's own budget lets the four be disrupted at once
	// (Karpenter's default 10% of 12 is 2; docs/design.md#disruption-budget)
	pool.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "4"}}
	s := newScenario("throughput-e2e", pool, 24, 1)
	var ctrl *controller
	var samples []atOnceSample

	BeforeAll(func() {
		installPrerequisites(ctx)
		s.setUp(ctx)
		ctrl = startController("throughput")
	})

	It("starts with twelve nodes, two replicas on each", func() {
		Expect(s.originals).To(HaveLen(12))
	})

	It("rotates every original node, four at a time", func() {
		start := time.Now()
		sampler := sampleAtOnce(ctx, s.name, s.originals)
		s.govern(ctx, "45s", func(p *v1alpha1.RotationPolicy) {
			p.Spec.Surge.MaxUnavailable = ptr.To(intstr.FromString("30%"))
		})
		for _, name := range s.originals {
			Eventually(gone(ctx, name)).WithTimeout(8*time.Minute).WithPolling(time.Second).Should(Satisfy(notFound), "original NodeClaim %s rotated away", name)
		}
		GinkgoWriter.Printf("twelve nodes rotated four at a time in %s\n", time.Since(start).Round(time.Second))
		By("stopping further rotations and letting those in flight finish")
		s.pause(ctx, 4*time.Minute)
		Eventually(func() int { return healthyPods(ctx, s.name, s.app) }).WithTimeout(2 * time.Minute).Should(Equal(int(s.replicas)))
		samples = sampler.end()
	})

	It("ran four at once and never five, one surge NodeClaim and surge node per rotation, the PDB held", func() {
		rotations := rotationsOf(s.rec, s.name)
		for _, name := range s.originals {
			Expect(rotations).To(HaveKey(name))
		}
		surgeNodes := map[string]string{}
		for claim, r := range rotations {
			GinkgoWriter.Printf("rotation %s: surge node %s, NodeClaims created %v, drain %s\n", claim, r.surgeNode, r.created, r.drain.Round(10*time.Millisecond))
			Expect(r.surgeReadyRV).NotTo(BeZero(), "rotation %s: the surge node became Ready", claim)
			Expect(r.surgeReadyRV).To(BeNumerically("<", r.deleteRV), "rotation %s: replacement Ready before the old claim's deletionTimestamp", claim)
			Expect(r.created).To(HaveLen(1), "rotation %s: Karpenter created exactly one NodeClaim for it", claim)
			Expect(surgeNodes).NotTo(HaveKey(r.surgeNode), "rotation %s shares its surge node with %s", claim, surgeNodes[r.surgeNode])
			surgeNodes[r.surgeNode] = claim
		}
		Expect(maxInFlight(s.rec, s.name)).To(Equal(4), "four rotations at once, never five")
		most := atOnceSample{}
		for _, sample := range samples {
			Expect(sample.placeholders).To(BeNumerically("<=", 4), "placeholders at %s", sample.at.Format(time.TimeOnly))
			Expect(sample.deleting).To(BeNumerically("<=", 4), "original claims deleting at %s", sample.at.Format(time.TimeOnly))
			most.placeholders, most.deleting = max(most.placeholders, sample.placeholders), max(most.deleting, sample.deleting)
		}
		GinkgoWriter.Printf("%d samples, 1 s apart: at most %d placeholders and %d original claims deleting at once\n", len(samples), most.placeholders, most.deleting)
		Expect(most.placeholders).To(BeNumerically(">=", 2), "the samples saw rotations side by side")
		s.expectSettled(ctx, []*controller{ctrl}, s.originals, 0)
	})
})
