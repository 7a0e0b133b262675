//go:build e2e

package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// A surge Karpenter cannot serve: once the workload runs, the pool's limits
// get a memory limit below what any node has. The placeholder requests CPU
// only, so our headroom check (requests against limits − usage, per
// requested resource) passes, but Karpenter filters out every instance
// type whose capacity exceeds a limit: it launches nothing and records
// FailedScheduling on the placeholder. The attempt fails fast
// (docs/design.md#fail-fast): a grace minute into a 10-minute readyTimeout
// it is rolled back with reason Unschedulable — the old node restored, the
// claim carrying its failure record, no NodeClaim created.
//
// A NodePool at its CPU limit never gets this far: the headroom gate
// refuses the start (the last spec, after the pause is cut), and a CPU limit between the usage and the usage plus
// one node does not do it on Karpenter v1.13 with kwok: with limits.cpu 11
// over two 4-core nodes, Karpenter launched a 4-core surge for every
// attempt (measured here).
var _ = Describe("fail-fast rollback when Karpenter cannot provision the surge", Label("rollback"), Ordered, func() {
	ctx := context.Background()
	s := newScenario("rollback-e2e", fixtures.RotationPool("rollback-e2e"), 4, 1)
	var ctrl *controller

	BeforeAll(func() {
		installPrerequisites(ctx)
		s.setUp(ctx)
		s.updatePool(ctx, func(np *karpv1.NodePool) {
			np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("1Mi")}
		})
		ctrl = startController("rollback")
	})

	It("starts a rotation and rolls it back a grace minute in, not at readyTimeout, once Karpenter says it cannot serve it", func() {
		Expect(s.originals).NotTo(BeEmpty())
		s.govern(ctx, "30s", func(p *v1alpha1.RotationPolicy) {
			p.Spec.Surge.ReadyTimeout = "10m"
			p.Spec.Surge.RetryBackoff = "1h"
			p.Spec.Surge.FailurePause = "1h"
		})
		claim := s.awaitRotation(ctx, 2*time.Minute, "a rotation starts: the headroom check passes", func(map[string]string, string) bool { return true })
		started := time.Now()
		// the grace minute, then at most one 30 s pending requeue
		Eventually(claimState(ctx, claim)).WithTimeout(150*time.Second).Should(Equal(v1alpha1.StateFailed), "the attempt is rolled back well inside readyTimeout")
		took := time.Since(started)
		GinkgoWriter.Printf("attempt on %s rolled back after %s (readyTimeout 10m)\n", claim, took.Round(time.Second))
		Expect(took).To(BeNumerically(">=", 55*time.Second), "not before the grace minute")
		Eventually(poolAnnotations(ctx, s.name)).WithTimeout(time.Minute).
			ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation))

		c := &karpv1.NodeClaim{}
		Expect(kube.Get(ctx, client.ObjectKey{Name: claim}, c)).To(Succeed())
		Expect(c.DeletionTimestamp).To(BeNil(), "a rolled-back claim is kept")
		Expect(c.Annotations).To(And(HaveKeyWithValue(v1alpha1.AnnotationRetryCount, "1"), HaveKey(v1alpha1.AnnotationFailedAt),
			HaveKeyWithValue(v1alpha1.AnnotationFailureReason, "Unschedulable")))
		n := &corev1.Node{}
		Expect(kube.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, n)).To(Succeed())
		Expect(n.Spec.Unschedulable).To(BeFalse(), "the old node is uncordoned")
		Expect(n.Annotations).NotTo(HaveKey(v1alpha1.KarpenterDoNotDisrupt), "the old node is no longer frozen")

		Expect(events(ctx, "SurgeUnschedulable", claim)).To(Equal(1), "SurgeUnschedulable said once, after the grace minute")
		Eventually(func() int { return events(ctx, "RotationFailed", claim) }).WithTimeout(30 * time.Second).Should(Equal(1))
		failed := ctrl.LogLines(`"rotation attempt failed"`)
		Expect(failed).To(HaveLen(1))
		Expect(failed[0]).To(ContainSubstring(`"reason":"Unschedulable"`))
		Expect(ctrl.metric("noderotation_completed_total", `nodepool="rollback-e2e"`, `outcome="failure"`)).To(Equal(1.0))
		Expect(ctrl.completions(claim)).To(BeZero(), "a failure is no completion")
		Expect(createdClaims(s.rec, s.name, s.originals)).To(BeEmpty(), "Karpenter launched nothing for the placeholder")
	})

	It("starts nothing during failurePause and leaves nothing behind", func() {
		Consistently(poolAnnotations(ctx, s.name)).WithTimeout(5 * time.Second).
			ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation))
		s.expectSettled(ctx, []*controller{ctrl}, nil, 0)
		Expect(healthyPods(ctx, s.name, s.app)).To(Equal(int(s.replicas)), "no workload Pod was disrupted")
	})

	// The "NodePool at its CPU limit": the headroom gate refuses
	// the start, so no surge is asked of Karpenter and nothing needs
	// rolling back. failurePause is cut so the gate is reached.
	It("starts nothing on a NodePool at its CPU limit: InsufficientHeadroom, no surge asked for", func() {
		var usage resource.Quantity
		Eventually(func() bool {
			usage = poolOf(ctx, s.name).Status.Resources[corev1.ResourceCPU]
			return !usage.IsZero()
		}).WithTimeout(30*time.Second).Should(BeTrue(), "Karpenter reports the pool's CPU usage")
		s.updatePool(ctx, func(np *karpv1.NodePool) {
			np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: usage}
		})
		s.updatePolicy(ctx, func(p *v1alpha1.RotationPolicy) { p.Spec.Surge.FailurePause = "0" })
		Eventually(func() int { return events(ctx, "InsufficientHeadroom", s.name) }).WithTimeout(2*time.Minute).
			Should(BeNumerically(">=", 1), "the pool says the limit leaves no room for the placeholder")
		GinkgoWriter.Printf("limits.cpu %s = usage: InsufficientHeadroom\n", usage.String())
		Consistently(poolAnnotations(ctx, s.name)).WithTimeout(5*time.Second).
			ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation), "no rotation starts")
		Expect(ctrl.LogLines(`"insufficient limits headroom; cannot surge"`)).NotTo(BeEmpty())
		Expect(ctrl.metric("noderotation_completed_total", `nodepool="rollback-e2e"`, `outcome="failure"`)).To(Equal(1.0), "no second attempt")
		Expect(createdClaims(s.rec, s.name, s.originals)).To(BeEmpty(), "no surge was asked of Karpenter")
	})
})

// createdClaims are the pool's NodeClaims the watch saw created that are
// not among originals.
func createdClaims(rec *recorder.Recorder, pool string, originals []string) []string {
	var out []string
	for _, r := range rec.Sorted() {
		if r.Kind == "NodeClaim" && recorder.Added(r) && r.Obj.GetLabels()[karpv1.NodePoolLabelKey] == pool {
			name := r.Obj.GetName()
			known := false
			for _, o := range originals {
				known = known || o == name
			}
			if !known {
				out = append(out, name)
			}
		}
	}
	return out
}
