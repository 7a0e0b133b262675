package rotation_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// The pool: 300 nodes, two 4-hour windows a week, expireAfter
// 720h, one rotation at a time, every other setting at its default.
// FEASIBLE means every node is rotated in time: False here, with the
// remedy; True again at the maxUnavailable it names, and at the default,
// auto (docs/design.md#coverage-verdict).
var _ = Describe("a policy that cannot cover its pool", func() {
	It("is Feasible=False ThroughputBelowArrival naming the maxUnavailable that covers it, and True at that maxUnavailable", func() {
		const pool = "fleet-300"
		createPoolWith(pool, poolOptions{wait: waitNone, policy: func(p *v1alpha1.RotationPolicy) {
			p.Spec.AgeThreshold = ""
			one := intstr.FromInt32(1)
			p.Spec.Surge = v1alpha1.SurgeSpec{MaxUnavailable: &one}
			p.Spec.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Tue", "Sat"}, Start: "02:00", End: "06:00"}}
		}})
		for i := range 300 {
			Expect(env.Client.Create(ctx, &karpv1.NodeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%03d", pool, i), Labels: map[string]string{karpv1.NodePoolLabelKey: pool}},
				Spec: karpv1.NodeClaimSpec{
					NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
					ExpireAfter:  karpv1.MustParseNillableDuration("720h"),
					Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}},
				},
			})).To(Succeed())
		}
		pokePool(pool)
		Eventually(policyCondition(pool, "Feasible"), timeout).Should(And(reason("ThroughputBelowArrival"),
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Message", And(ContainSubstring("NodePool fleet-300: not covered: 300 nodes need"), ContainSubstring("10 fit (C at maxUnavailable 1)"), ContainSubstring("maxUnavailable 15"), ContainSubstring("pools of at most 20 nodes")))))

		By("at the maxUnavailable it names, the pool is covered")
		p := &v1alpha1.RotationPolicy{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: pool}, p)).To(Succeed())
		n := intstr.FromInt32(15)
		p.Spec.Surge.MaxUnavailable = &n
		Expect(env.Client.Update(ctx, p)).To(Succeed())
		Eventually(policyCondition(pool, "Feasible"), timeout).Should(And(reason("Covered"), HaveField("Status", metav1.ConditionTrue)))

		By("at the default, auto, it is covered too")
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: pool}, p)).To(Succeed())
		p.Spec.Surge.MaxUnavailable = nil
		Expect(env.Client.Update(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) string {
			g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: pool}, p)).To(Succeed())
			return p.Spec.Surge.MaxUnavailable.String()
		}, timeout).Should(Equal("auto"))
		Eventually(policyCondition(pool, "Feasible"), timeout).Should(And(reason("Covered"), HaveField("Status", metav1.ConditionTrue)))
		Expect(env.Client.DeleteAllOf(ctx, &karpv1.NodeClaim{}, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})).To(Succeed())
	})
})
