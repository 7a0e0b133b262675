//go:build e2e

package e2e_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// Forceful fallback (opt-in). A deadline nearer than t_rot happens to a
// claim the controller could not rotate in time — here, the policy arrives
// late. The pool's claims expire 5m30s after creation with a 1-minute
// terminationGracePeriod; with readyTimeout 30s, t_rot = 30s + 1m + 2m
// buffer = 3m30s, and the 30 s ageThreshold still leaves one guaranteed
// chance in the always-open window (expireAfter ≥ A + t_rot + P), so the
// schedule is feasible. Once a claim is older than 2m its deadline is
// nearer than t_rot: the policy created then has it rotated without a
// surge — the claim is deleted at once, Karpenter drains it through
// evictions and provisions for the evicted Pods — well before Karpenter's
// own expiry at 5m30s. The tGP must outlast the drain (two evictions, each
// waiting for a booted node): with 10 s, Karpenter deleted the second Pod
// past the PDB when the tGP ran out, and the checker caught it.
var _ = Describe("forceful fallback on real Karpenter", Label("fallback"), Ordered, func() {
	ctx := context.Background()
	np := fixtures.RotationPool("fallback-e2e")
	np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("5m30s")
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Minute}
	s := newScenario("fallback-e2e", np, 4, 1)
	var ctrl *controller

	BeforeAll(func() {
		installPrerequisites(ctx)
		s.setUp(ctx)
		ctrl = startController("fallback")
	})

	It("rotates a claim too close to its deadline surge-less", func() {
		oldest := time.Now()
		for _, c := range claimsOf(ctx, s.name) {
			if c.CreationTimestamp.Time.Before(oldest) {
				oldest = c.CreationTimestamp.Time
			}
		}
		By("waiting until the claims are 2m10s old: their deadlines are nearer than t_rot")
		time.Sleep(time.Until(oldest.Add(2*time.Minute + 10*time.Second)))
		s.govern(ctx, "30s", func(p *v1alpha1.RotationPolicy) {
			p.Spec.Surge.ReadyTimeout = "30s"
			p.Spec.Surge.ForcefulFallback.Enabled = true
			p.Spec.Surge.CooldownAfter = "1h" // one rotation, then gate A holds
		})
		claim := s.awaitRotation(ctx, 2*time.Minute, "a forceful-fallback rotation starts", func(a map[string]string, _ string) bool {
			return a[v1alpha1.AnnotationRotationMode] == v1alpha1.RotationModeFallback
		})
		Eventually(gone(ctx, claim)).WithTimeout(4*time.Minute).Should(Satisfy(notFound), "the claim is drained away")
		Eventually(func() int { return events(ctx, "RotationCompleted", s.name) }).WithTimeout(time.Minute).Should(Equal(1))
		Expect(events(ctx, "ForcefulFallback", s.name)).To(Equal(1))
		Expect(ctrl.metric("noderotation_forceful_fallback_total", `nodepool="fallback-e2e"`)).To(Equal(1.0))
		lines := 0
		for _, l := range ctrl.LogLines(`"rotation complete"`) {
			if strings.Contains(l, claim) {
				Expect(l).To(And(ContainSubstring(`"outcome":"success"`), ContainSubstring(`"mode":"forceful-fallback"`)))
				lines++
			}
		}
		Expect(lines).To(Equal(1), "one completion line")
		Expect(placeholdersSeen(s.rec)).To(BeEmpty(), "surge-less: no placeholder was ever created")
		Eventually(func() int { return healthyPods(ctx, s.name, s.app) }).WithTimeout(2 * time.Minute).Should(Equal(int(s.replicas)))
		Consistently(poolAnnotations(ctx, s.name)).WithTimeout(5*time.Second).
			ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation), "cooldownAfter holds the next start")
		s.expectSettled(ctx, []*controller{ctrl}, []string{claim}, 1)
	})
})

// placeholdersSeen are the placeholder Pods the watch saw created.
func placeholdersSeen(rec *recorder.Recorder) []string {
	var out []string
	for _, r := range rec.Sorted() {
		if r.Kind == "Pod" && recorder.Added(r) && r.Obj.GetNamespace() == fixtures.ControllerNamespace && r.Obj.GetLabels()[v1alpha1.LabelSurgeFor] != "" {
			out = append(out, r.Obj.GetName())
		}
	}
	return out
}
