//go:build e2e

package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
)

// A Pod with karpenter.sh/do-not-disrupt on one of the pool's nodes
// (docs/design.md#drain-blockers): the controller rotates every other
// node first and passes that one over — its deadline is hours away, so
// without a DrainBlocked Warning — until the Pod is gone; then it rotates
// it too. Karpenter would hold that node's drain until the
// terminationGracePeriod.
var _ = Describe("a do-not-disrupt Pod on one node", Label("drainblock"), Ordered, func() {
	ctx := context.Background()
	s := newScenario("dnd-e2e", fixtures.RotationPool("dnd-e2e"), 8, 1)
	var ctrl *controller
	var blocked string

	BeforeAll(func() {
		installPrerequisites(ctx)
		s.setUp(ctx)
		ctrl = startController("drainblock")
	})

	It("runs a do-not-disrupt Pod on one of four nodes or more", func() {
		Expect(len(s.originals)).To(BeNumerically(">=", 4))
		blocked = s.originals[0]
		c := &karpv1.NodeClaim{}
		Expect(kube.Get(ctx, client.ObjectKey{Name: blocked}, c)).To(Succeed())
		job := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "batch-job", Namespace: s.name, Annotations: map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true"}},
			// Bound by name, past the scheduler; no toleration: a Pod that
			// tolerates Karpenter's disrupted taint is not drained at all.
			Spec: corev1.PodSpec{
				NodeName: c.Status.NodeName,
				Containers: []corev1.Container{{Name: "job", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}}},
			},
		}
		Expect(kube.Create(ctx, job)).To(Succeed())
		Eventually(func() (corev1.PodPhase, error) {
			err := kube.Get(ctx, client.ObjectKeyFromObject(job), job)
			return job.Status.Phase, err
		}).WithTimeout(time.Minute).Should(Equal(corev1.PodRunning))
	})

	It("rotates every other original node while that one waits", func() {
		s.govern(ctx, "45s", nil)
		for _, name := range s.originals[1:] {
			Eventually(gone(ctx, name)).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(Satisfy(notFound), "original NodeClaim %s rotated away", name)
		}
		Consistently(claimState(ctx, blocked)).WithTimeout(20*time.Second).Should(BeEmpty(), "%s is passed over while the Pod runs", blocked)
		Expect(events(ctx, "DrainBlocked", blocked)).To(BeZero(), "its deadline is hours away: nothing forces it, so nothing warns")
		Expect(ctrl.metric("noderotation_drain_blocked_nodes", `nodepool="dnd-e2e"`, `reason="do-not-disrupt"`)).To(Equal(1.0))
	})

	It("rotates it once the Pod is gone", func() {
		Expect(kube.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "batch-job", Namespace: s.name}}, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(gone(ctx, blocked)).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(Satisfy(notFound), "%s rotated last", blocked)
		s.pause(ctx, 3*time.Minute)
		rotations := rotationsOf(s.rec, s.name)
		for _, name := range s.originals[1:] {
			Expect(rotations[name].startRV).To(BeNumerically("<", rotations[blocked].startRV), "%s started before %s", name, blocked)
		}
		s.expectSettled(ctx, []*controller{ctrl}, s.originals, 0)
	})
})
