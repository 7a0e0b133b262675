//go:build e2e

package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
)

// A drain held by a PDB that allows no disruption. The PDB allows one while
// the controller picks its claim — one allowing none with every Pod
// healthy would keep the claim from being picked at all
// (docs/design.md#drain-blockers) — and none from the moment the rotation
// is pending, before its drain. The claims are created
// without a terminationGracePeriod, so Karpenter never forces the drain;
// the pool's template then gets a 1 s one, so the controller's bound (tGP
// + 2m buffer) passes while the drain is still held. A budget of zero nodes
// keeps Karpenter from replacing the drifted claims itself, and the policy's
// nodePoolBudgets: Ignore lets the rotation past it. The stuck-drain
// gauge goes to 1 and the gate stays held; once the PDB is gone the drain
// ends and the gate opens.
var _ = Describe("a drain held by a PDB that cannot be satisfied", Label("stuckdrain"), Ordered, func() {
	ctx := context.Background()
	np := fixtures.RotationPool("stuck-e2e")
	np.Spec.Template.Spec.TerminationGracePeriod = nil
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
	s := newScenario("stuck-e2e", np, 4, 1)
	var ctrl *controller

	BeforeAll(func() {
		installPrerequisites(ctx)
		s.setUp(ctx)
		s.updatePool(ctx, func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Second}
		})
		ctrl = startController("stuckdrain")
	})

	It("reports the drain stuck after tGP + buffer and keeps the gate held", func() {
		// the budget of 0 is there to keep Karpenter's drift away, not the
		// rotation: the policy says so (docs/design.md#disruption-budget)
		s.govern(ctx, "30s", func(p *v1alpha1.RotationPolicy) { p.Spec.Surge.NodePoolBudgets = v1alpha1.BudgetsIgnore })
		s.awaitRotation(ctx, 3*time.Minute, "a rotation starts", pending(ctx))
		By("tightening the PDB to allow no disruption while the surge is pending")
		Eventually(func() error {
			pdb := &policyv1.PodDisruptionBudget{}
			if err := kube.Get(ctx, client.ObjectKey{Namespace: s.name, Name: "web"}, pdb); err != nil {
				return err
			}
			pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(0))
			return kube.Update(ctx, pdb)
		}).WithTimeout(10 * time.Second).Should(Succeed())
		Eventually(func() (int32, error) {
			pdb := &policyv1.PodDisruptionBudget{}
			err := kube.Get(ctx, client.ObjectKey{Namespace: s.name, Name: "web"}, pdb)
			return pdb.Status.DisruptionsAllowed, err
		}).WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).Should(BeZero(), "the disruption controller allows none")
		claim := s.awaitRotation(ctx, 3*time.Minute, "a rotation reaches its drain", func(a map[string]string, _ string) bool {
			return a[v1alpha1.AnnotationActiveRotationState] == v1alpha1.StateDraining
		})
		drainingAt, err := time.Parse(time.RFC3339, poolOf(ctx, s.name).Annotations[v1alpha1.AnnotationDrainingAt])
		Expect(err).NotTo(HaveOccurred(), "the draining mirror records draining-at")
		Expect(ctrl.metric("noderotation_drain_stuck", `nodepool="stuck-e2e"`)).To(Equal(0.0), "not stuck yet")
		// Polled every second: the first 1 is seen within a second of being set.
		Eventually(func() float64 { return ctrl.metric("noderotation_drain_stuck", `nodepool="stuck-e2e"`) }).
			WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Equal(1.0))
		stuckSeen := time.Now()
		GinkgoWriter.Printf("drain of %s reported stuck %s after draining-at\n", claim, stuckSeen.Sub(drainingAt).Round(time.Second))
		// The bound is tGP (1 s) + the 2 m buffer from the claim's delete,
		// which follows draining-at; draining-at has second precision.
		Expect(stuckSeen).To(BeTemporally(">=", drainingAt.Add(2*time.Minute)), "not before tGP + buffer")
		Expect(stuckSeen).To(BeTemporally("<=", drainingAt.Add(3*time.Minute)), "within a minute of tGP + buffer: a pass is due when the bound passes (measured: about 22 s after)")
		Expect(ctrl.LogLines("drain exceeds terminationGracePeriod + buffer")).To(HaveLen(1), "logged once")
		Consistently(anchorOf(ctx, s.name)).
			WithTimeout(5*time.Second).Should(Equal(claim), "the gate stays held: a second node never drains")
		Expect(claimsOf(ctx, s.name)).To(ContainElement(HaveField("ObjectMeta.Name", claim)), "the claim is still draining")

		By("removing the PDB: the drain ends and the gate opens")
		Expect(kube.Delete(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: s.name}})).To(Succeed())
		s.pdb = 0 // no budget left whose floor the invariants could hold the drain to
		Eventually(gone(ctx, claim)).WithTimeout(3 * time.Minute).Should(Satisfy(notFound))
		s.pause(ctx, 3*time.Minute)
		Eventually(func() float64 { return ctrl.metric("noderotation_drain_stuck", `nodepool="stuck-e2e"`) }).
			WithTimeout(time.Minute).Should(Equal(0.0))
		Expect(ctrl.completions(claim)).To(Equal(1))
		s.expectSettled(ctx, []*controller{ctrl}, []string{claim}, 0)
	})
})
