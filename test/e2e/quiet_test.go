//go:build e2e

package e2e_test

import (
	"context"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/plan"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/testenv"
)

// quietFor is how long day one is watched (the ten minutes).
const quietFor = 10 * time.Minute

// Day one on real Karpenter (make quiet-day-one; not a CI job: it takes
// ten minutes): a NodePool with Karpenter's defaults — expireAfter 720h,
// no terminationGracePeriod, consolidation WhenEmptyOrUnderutilized; the
// fixture's 64-CPU limit and kwok instance requirements aside — the
// demo's workload, and the demo's policy (every node older than two
// minutes rotated, 24/7), so the pool rotates throughout. A healthy
// cluster: the controller raises no Warning Event in ten minutes.
var _ = Describe("day one with Karpenter's defaults and the demo", Label("quiet"), Ordered, func() {
	ctx := context.Background()
	pool := fixtures.NodePool("quiet-e2e", "4")
	pool.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("720h")
	pool.Spec.Disruption = karpv1.Disruption{ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidateAfter: karpv1.MustParseNillableDuration("0s")}
	s := newScenario("quiet-e2e", pool, 4, 1)
	var ctrl *controller

	BeforeAll(func() {
		installPrerequisites(ctx)
		s.setUp(ctx)
		ctrl = startController("quiet")
	})

	It("raises no Warning Event while the demo's policy rotates the pool for ten minutes", func() {
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		demo, err := plan.LoadPolicy(filepath.Join(root, "docs/demo/policy.yaml"), "")
		Expect(err).NotTo(HaveOccurred())
		s.govern(ctx, demo.Spec.AgeThreshold, func(p *v1alpha1.RotationPolicy) {
			sel := p.Spec.NodePoolSelector
			p.Spec = demo.Spec
			p.Spec.NodePoolSelector = sel
		})
		start := time.Now()
		Consistently(func() []string { return controllerWarnings(ctx, start) }).WithTimeout(quietFor).WithPolling(10*time.Second).
			Should(BeEmpty(), "the controller's Warning Events")
		// the controller's own successes, not claims gone: Karpenter's
		// consolidation may delete an original by itself
		rotated := ctrl.metric("noderotation_completed_total", `nodepool="quiet-e2e"`, `outcome="success"`)
		GinkgoWriter.Printf("day one: %.0f rotations completed in %s (%d original claims), no Warning\n", rotated, quietFor, len(s.originals))
		Expect(rotated).To(BeNumerically(">", 0), "the pool rotated meanwhile: a quiet controller that did nothing proves nothing")
		Expect(ctrl.metric("noderotation_completed_total", `nodepool="quiet-e2e"`, `outcome="failure"`)).To(BeNumerically("<=", 0))
	})
})

// controllerWarnings are the Warning Events the controller raised since
// start, as "reason object: message".
func controllerWarnings(ctx context.Context, start time.Time) []string {
	list := &corev1.EventList{}
	Expect(kube.List(ctx, list)).To(Succeed())
	var out []string
	for _, e := range list.Items {
		when := e.LastTimestamp.Time
		if e.EventTime.Time.After(when) {
			when = e.EventTime.Time
		}
		if e.Type == corev1.EventTypeWarning && (e.Source.Component == "node-rotation-controller" || e.ReportingController == "node-rotation-controller") && !when.Before(start.Truncate(time.Second)) {
			out = append(out, e.Reason+" "+e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name+": "+e.Message)
		}
	}
	return out
}
