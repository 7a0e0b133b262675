package rotation_test

import (
	"time"

	"github.com/awslabs/operatorpkg/status"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// Fail fast (docs/design.md#fail-fast): a pending attempt whose placeholder
// Karpenter has said it cannot serve is rolled back a grace minute into its
// 1h readyTimeout, with the reason recorded and said once across both
// instances. The controllers' clock is moved past the grace minute, so no
// other spec's pool may be governed meanwhile.
var _ = Describe("failing fast on a surge Karpenter cannot serve", func() {
	// pastGrace moves the clock beyond the grace minute (the readyTimeout
	// of 1h stays far off) and wakes the pool, as a skew is no event.
	pastGrace := func(pool string) {
		GinkgoHelper()
		pools := &karpv1.NodePoolList{}
		Expect(env.Client.List(ctx, pools)).To(Succeed())
		for _, p := range pools.Items {
			Expect(p.Name).To(BeElementOf(pool, warmupPool), "no other spec's pool is left for the skew to drive")
		}
		advanceClock(90 * time.Second)
		DeferCleanup(func() { skew.Store(0) })
		pokePool(pool)
	}
	rolledBack := func(pool, old, reason string) {
		GinkgoHelper()
		assertsTransition(pool, "pending.surge-unservable")
		Eventually(claimAnnotations(old), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationState, "failed"))
		Expect(claimAnnotations(old)()).To(And(HaveKeyWithValue(v1alpha1.AnnotationFailureReason, reason), HaveKeyWithValue(v1alpha1.AnnotationRetryCount, "1")))
		Eventually(placeholderExists(old), timeout).Should(BeFalse())
		Eventually(unfrozen(fk.NodeName(old)), timeout).Should(BeTrue())
		Eventually(uncordoned(fk.NodeName(old)), timeout).Should(BeTrue())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		Expect(getPool(pool).Annotations).To(HaveKey(v1alpha1.AnnotationLastFailureAt))
		failures := scrape("noderotation_completed_total", map[string]string{"nodepool": pool, "outcome": "failure"})
		Eventually(failures, timeout).Should(Equal(1.0))
		Consistently(failures, 2*time.Second).Should(Equal(1.0), "counted once across two racing instances")
		Expect(eventCount(old, "RotationFailed")()).To(BeNumerically("==", 1))
	}

	It("rolls back when Karpenter records FailedScheduling on the placeholder", func() {
		const pool, old = "unschedulable", "unschedulable-old"
		startPending(pool, old)
		By("Karpenter recording that no instance type fits the pool's limits")
		ph := placeholder(old)
		Expect(env.Client.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: controllerNS, GenerateName: ph.Name + "."},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: ph.Namespace, Name: ph.Name, UID: ph.UID},
			Reason:         "FailedScheduling", Type: corev1.EventTypeWarning, Source: corev1.EventSource{Component: "karpenter"},
			Message:        `Failed to schedule pod, all available instance types exceed limits for nodepool: "unschedulable"`,
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
		})).To(Succeed())
		Consistently(claimAnnotations(old), 2*time.Second).Should(HaveKeyWithValue(v1alpha1.AnnotationState, "pending"), "inside the grace minute the attempt waits")
		pastGrace(pool)
		rolledBack(pool, old, "Unschedulable")
		Eventually(eventCount(old, "SurgeUnschedulable"), timeout).Should(BeNumerically("==", 1))
	})

	It("rolls back when the surge NodeClaim reports a launch failure", func() {
		const pool, old, surgeClaim = "launchfail", "launchfail-old", "launchfail-surge"
		startPending(pool, old)
		By("Karpenter failing to launch the surge NodeClaim it created for the placeholder")
		nc := &karpv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: surgeClaim, Labels: map[string]string{karpv1.NodePoolLabelKey: pool}},
			Spec: karpv1.NodeClaimSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}},
			},
		}
		Expect(env.Client.Create(ctx, nc)).To(Succeed())
		nc.Status.Conditions = []status.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionUnknown, Reason: "LaunchFailed",
			Message: "creating instance, quota exceeded", LastTransitionTime: metav1.Now()}}
		Expect(env.Client.Status().Update(ctx, nc)).To(Succeed())
		pastGrace(pool)
		rolledBack(pool, old, "LaunchFailed")
		Eventually(eventCount(old, "SurgeLaunchFailed"), timeout).Should(BeNumerically("==", 1))
		Eventually(func() bool {
			c := &karpv1.NodeClaim{}
			return env.Client.Get(ctx, client.ObjectKey{Name: surgeClaim}, c) != nil || c.DeletionTimestamp != nil
		}, timeout).Should(BeTrue(), "the induced surge claim, with no node, is reaped")
	})
})
