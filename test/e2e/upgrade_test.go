//go:build e2e

package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/process"
	"github.com/noderotation/node-rotation-controller/test/testenv"
)

// upgradeFrom is the build issue #34 names for the upgrade test: 22
// commits before rotation slots (31dbc00), one anchor per pool — the
// format slot 1 kept (docs/design.md#throughput).
const upgradeFrom = "a8de63b"

// An upgrade with a rotation in flight (docs/operations.md, "Rotating
// several nodes of a pool at once"):
// the controller built from upgradeFrom starts a rotation and is stopped
// with it pending, or draining; this checkout's controller finishes it —
// no artefact left, each announcement made once across both. Then the same
// as a rolling upgrade of two replicas: the old one leads, the new one
// waits for the Lease, the old one is stopped mid-rotation.
var _ = Describe("an upgrade from the single-anchor build with a rotation in flight", Label("upgrade"), Ordered, func() {
	ctx := context.Background()
	var old string

	BeforeAll(func() {
		installPrerequisites(ctx)
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		start := time.Now()
		old, err = process.BinaryAt(root, upgradeFrom, logDir)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("controller of %s: %s (%s)\n", upgradeFrom, old, time.Since(start).Round(time.Second))
	})

	It("finishes a rotation the old build left pending", func() {
		s := newScenario("upgrade-pending", fixtures.RotationPool("upgrade-pending"), 4, 1)
		s.setUp(ctx)
		prior := startBinary(old, "upgrade-pending-old")
		claim := s.holdPending(ctx)
		Expect(prior.Stop(15*time.Second)).To(BeTrue(), "the old build stops on SIGTERM")
		s.expectSingleAnchor(ctx, claim, v1alpha1.StatePending)
		s.release(ctx)
		next := startController("upgrade-pending-new")
		s.expectFinished(ctx, claim, prior, next)
	})

	It("finishes a rotation the old build left draining", func() {
		s := newScenario("upgrade-draining", fixtures.RotationPool("upgrade-draining"), 4, 1)
		s.setUp(ctx)
		prior := startBinary(old, "upgrade-draining-old")
		s.govern(ctx, "30s", func(p *v1alpha1.RotationPolicy) {
			p.Spec.Surge.CooldownAfter = "1h"
			storedBeforeTheUpgrade(p)
		})
		s.awaitRotation(ctx, 3*time.Minute, "a rotation starts", pending(ctx))
		By("holding the drain: a PDB that allows no disruption from the moment the surge is pending")
		s.setPDB(ctx, 0)
		// Both the pool's state and the claim's mirror: the claim is patched
		// after the pool, and a SIGTERM between the two (CI saw it) leaves
		// a state the old build never rests in.
		claim := s.awaitRotation(ctx, 3*time.Minute, "the rotation drains", func(a map[string]string, claim string) bool {
			return a[v1alpha1.AnnotationActiveRotationState] == v1alpha1.StateDraining && claimState(ctx, claim)() == v1alpha1.StateDraining
		})
		Expect(prior.Stop(15*time.Second)).To(BeTrue(), "the old build stops on SIGTERM")
		s.expectSingleAnchor(ctx, claim, v1alpha1.StateDraining)
		next := startController("upgrade-draining-new")
		s.setPDB(ctx, 1)
		s.expectFinished(ctx, claim, prior, next)
	})

	It("finishes the old leader's rotation when a rolling upgrade stops it", func() {
		s := newScenario("upgrade-rolling", fixtures.RotationPool("upgrade-rolling"), 4, 1)
		s.setUp(ctx)
		lease := []string{"-leader-elect=true", "-leader-election-id=e2e-upgrade"}
		prior := startBinary(old, "upgrade-rolling-old", lease...)
		Eventually(func() []string { return prior.LogLines("Successfully acquired lease") }).WithTimeout(time.Minute).ShouldNot(BeEmpty(), "the old replica leads")
		next := startController("upgrade-rolling-new", lease...)
		claim := s.holdPending(ctx)
		Expect(next.LogLines("Successfully acquired lease")).To(BeEmpty(), "the new replica waits for the Lease")
		Expect(prior.Stop(15*time.Second)).To(BeTrue(), "the old leader stops on SIGTERM")
		stopped := time.Now()
		Eventually(func() []string { return next.LogLines("Successfully acquired lease") }).WithTimeout(time.Minute).ShouldNot(BeEmpty(), "the new replica leads")
		GinkgoWriter.Printf("the new replica leads %s after the old one stopped\n", time.Since(stopped).Round(time.Second))
		s.release(ctx)
		s.expectFinished(ctx, claim, prior, next)
	})
})

// holdPending governs the pool and holds its first rotation pending: a
// memory limit below any node's keeps Karpenter from launching the surge
// (the placeholder requests CPU only, so the headroom check passes; see
// rollback_test.go), readyTimeout 10m keeps it from rolling back, and
// cooldownAfter 1h keeps a second rotation from starting. It returns once
// the placeholder waits.
func (s *scenario) holdPending(ctx context.Context) string {
	s.updatePool(ctx, func(np *karpv1.NodePool) {
		np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("1Mi")}
	})
	s.govern(ctx, "30s", func(p *v1alpha1.RotationPolicy) {
		p.Spec.Surge.ReadyTimeout = "10m"
		p.Spec.Surge.CooldownAfter = "1h"
		storedBeforeTheUpgrade(p)
	})
	claim := s.awaitRotation(ctx, 3*time.Minute, "a rotation is pending", pending(ctx))
	Eventually(func() error {
		return kube.Get(ctx, client.ObjectKey{Namespace: fixtures.ControllerNamespace, Name: surge.PlaceholderName(claim)}, &corev1.Pod{})
	}).WithTimeout(time.Minute).Should(Succeed(), "the placeholder of %s created", claim)
	return claim
}

// release lets Karpenter launch nodes again.
func (s *scenario) release(ctx context.Context) {
	s.updatePool(ctx, func(np *karpv1.NodePool) {
		np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("64")}
	})
}

func (s *scenario) setPDB(ctx context.Context, maxUnavailable int32) {
	Eventually(func() error {
		pdb := &policyv1.PodDisruptionBudget{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: s.name, Name: "web"}, pdb); err != nil {
			return err
		}
		pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(maxUnavailable))
		return kube.Update(ctx, pdb)
	}).WithTimeout(10 * time.Second).Should(Succeed())
	Eventually(func() (int32, error) {
		pdb := &policyv1.PodDisruptionBudget{}
		err := kube.Get(ctx, client.ObjectKey{Namespace: s.name, Name: "web"}, pdb)
		return pdb.Status.DisruptionsAllowed, err
	}).WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).Should(BeNumerically("<=", maxUnavailable), "the disruption controller allows at most %d", maxUnavailable)
}

// expectSingleAnchor: what the old build left is the format slot 1 reads —
// the anchor and its mirror under the keys of one rotation at a time, no
// slot key.
func (s *scenario) expectSingleAnchor(ctx context.Context, claim, state string) {
	a := poolOf(ctx, s.name).Annotations
	Expect(a).To(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, claim))
	if state == v1alpha1.StateDraining {
		Expect(a).To(HaveKeyWithValue(v1alpha1.AnnotationActiveRotationState, state))
	}
	Expect(claimState(ctx, claim)()).To(Equal(state))
	for k := range a {
		slot, _, ok := v1alpha1.SlotOf(k)
		Expect(!ok || slot == 1).To(BeTrue(), "the old build wrote %s", k)
	}
}

// expectFinished: the new build ends the rotation the old one started —
// the claim rotated away, one surge NodeClaim, the start announced once (by
// the old build) and the completion once (by the new), nothing left.
func (s *scenario) expectFinished(ctx context.Context, claim string, prior, next *controller) {
	Eventually(gone(ctx, claim)).WithTimeout(5*time.Minute).Should(Satisfy(notFound), "the new build finishes the rotation of %s", claim)
	Eventually(func() int { return next.completions(claim) }).WithTimeout(time.Minute).Should(Equal(1))
	Expect(prior.completions(claim)).To(BeZero(), "the old build stopped before the completion")
	Eventually(func() int { return events(ctx, "RotationCompleted", s.name) }).WithTimeout(30 * time.Second).Should(Equal(1))
	Consistently(func() int { return events(ctx, "RotationStarted", s.name) }).WithTimeout(3*time.Second).Should(Equal(1), "the start announced once, by the old build")
	Expect(createdClaims(s.rec, s.name, s.originals)).To(HaveLen(1), "one surge NodeClaim across both builds")
	Consistently(poolAnnotations(ctx, s.name)).WithTimeout(3*time.Second).
		ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation), "cooldownAfter holds the next start")
	s.expectSettled(ctx, []*controller{prior, next}, []string{claim}, 0)
}

// storedBeforeTheUpgrade gives the policy the maxUnavailable the old
// build's CRD stored in every policy it admitted, 1: the old build reads
// the field as an integer and fails to list any policy holding the new
// default, auto (docs/operations.md#upgrading-to-the-auto-default). The
// policy is created here after the new CRD is in place, so it is written
// as one created before the upgrade would be.
func storedBeforeTheUpgrade(p *v1alpha1.RotationPolicy) {
	p.Spec.Surge.MaxUnavailable = ptr.To(intstr.FromInt32(1))
}
