package envtest_test

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
)

var _ = Describe("the Karpenter v1 API on a real API server", func() {
	ctx := context.Background()
	nodeClassRef := &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
	zoneReq := karpv1.NodeSelectorRequirementWithMinValues{
		Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"test-zone-a"},
	}

	It("round-trips a NodePool through the typed client", func() {
		np := &karpv1.NodePool{
			ObjectMeta: metav1.ObjectMeta{Name: "general", Annotations: map[string]string{"noderotation.io/freeze": "2026-12-01T00:00:00Z"}},
			Spec: karpv1.NodePoolSpec{
				Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
					NodeClassRef:           nodeClassRef,
					Requirements:           []karpv1.NodeSelectorRequirementWithMinValues{zoneReq},
					ExpireAfter:            karpv1.MustParseNillableDuration("336h"),
					TerminationGracePeriod: &metav1.Duration{Duration: 24 * time.Hour},
				}},
				Limits: karpv1.Limits{corev1.ResourceCPU: resource.MustParse("16")},
			},
		}
		Expect(env.Client.Create(ctx, np)).To(Succeed())

		got := &karpv1.NodePool{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(np), got)).To(Succeed())
		Expect(got.Annotations).To(HaveKeyWithValue("noderotation.io/freeze", "2026-12-01T00:00:00Z"))
		Expect(got.Spec.Template.Spec.ExpireAfter.Duration).To(HaveValue(Equal(336 * time.Hour)))
		Expect(got.Spec.Template.Spec.TerminationGracePeriod.Duration).To(Equal(24 * time.Hour))
		Expect(got.Spec.Limits).To(HaveKeyWithValue(corev1.ResourceCPU, resource.MustParse("16")))
		// The CRD's defaulting ran server-side: the API server really served it.
		Expect(got.Spec.Disruption.ConsolidationPolicy).To(Equal(karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized))
	})

	It("round-trips a NodeClaim and its status subresource", func() {
		nc := &karpv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "general-abcde", Labels: map[string]string{karpv1.NodePoolLabelKey: "general"}},
			Spec: karpv1.NodeClaimSpec{
				NodeClassRef: nodeClassRef,
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{zoneReq},
				ExpireAfter:  karpv1.MustParseNillableDuration("1h"),
			},
		}
		Expect(env.Client.Create(ctx, nc)).To(Succeed())

		nc.Status.ProviderID = "kwok://general-abcde"
		nc.Status.NodeName = "node-abcde"
		nc.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("3800m")}
		Expect(env.Client.Status().Update(ctx, nc)).To(Succeed())

		got := &karpv1.NodeClaim{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(nc), got)).To(Succeed())
		Expect(got.Labels).To(HaveKeyWithValue(karpv1.NodePoolLabelKey, "general"))
		Expect(got.Spec.ExpireAfter.Duration).To(HaveValue(Equal(time.Hour)))
		Expect(got.Status.NodeName).To(Equal("node-abcde"))
		Expect(got.Status.Allocatable.Cpu().MilliValue()).To(BeNumerically("==", 3800))

		list := &karpv1.NodeClaimList{}
		Expect(env.Client.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: "general"})).To(Succeed())
		Expect(list.Items).To(HaveLen(1))
	})

	It("refuses a NodeClaim the CRD's validation rejects", func() {
		bad := &karpv1.NodeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec: karpv1.NodeClaimSpec{
				NodeClassRef: nodeClassRef,
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"x"}}},
			},
		}
		err := env.Client.Create(ctx, bad)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring(`label "kubernetes.io/hostname" is restricted`))
	})
})
