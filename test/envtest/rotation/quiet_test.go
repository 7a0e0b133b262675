package rotation_test

import (
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/plan"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
	"github.com/noderotation/node-rotation-controller/test/testenv"
)

// quietDayOne lists every Warning a default install emits on a healthy
// pool with Karpenter's defaults (expireAfter 720h, no
// terminationGracePeriod) under the README's first policy: none. A new
// Warning there fails this spec — add it here only if an operator must act
// on it on day one.
var quietDayOne = []string{}

var _ = Describe("day one with Karpenter's defaults", func() {
	It("emits no Warning Event for a healthy pool governed by the README's first policy", func() {
		const pool = "day-one"
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		readme, err := plan.LoadPolicy(filepath.Join(root, "docs/examples/api-policy.yaml"), "")
		Expect(err).NotTo(HaveOccurred())
		for i := range 4 {
			createClaim(fk.Claim{Pool: pool, Name: pool + "-" + string(rune('a'+i)), Zone: "zone-a", ExpireAfter: "720h"})
		}
		createPoolWith(pool, poolOptions{wait: waitPass, policy: func(p *v1alpha1.RotationPolicy) {
			sel := p.Spec.NodePoolSelector
			p.Spec = readme.Spec
			p.Spec.NodePoolSelector = sel
		}, pool: func(np *karpv1.NodePool) {
			np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("720h")
			np.Spec.Template.Spec.TerminationGracePeriod = nil
		}})
		warnings := func() []string {
			list := &corev1.EventList{}
			Expect(env.Client.List(ctx, list)).To(Succeed())
			var out []string
			for _, e := range list.Items {
				// the pool, its claims (day-one-a…) and their nodes
				if e.Type == corev1.EventTypeWarning && (e.InvolvedObject.Name == pool || strings.Contains(e.InvolvedObject.Name, pool+"-")) {
					out = append(out, e.Reason+": "+e.Message)
				}
			}
			return out
		}
		Consistently(warnings, 5*time.Second).Should(ConsistOf(quietDayOne), "the Warnings of a default install on day one")
		Expect(coverage.passCount(pool)()).To(BeNumerically(">=", 2), "the pool was decided on")
		Expect(policyCondition(pool, "Feasible")()).To(And(reason("Covered"), HaveField("Status", metav1.ConditionTrue)))
	})
})
