//go:build e2e

package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// The controller against real Karpenter (kwok provider, node boot delay):
// every original node rotated make-before-break, serially, with exactly one
// NodeClaim created per rotation and no Pod pending longer than the drain.
var _ = Describe("graceful rotation on real Karpenter", Label("rotation"), Ordered, func() {
	const pool, ns = "rotation-e2e", "rotation-e2e"
	ctx := context.Background()
	app := map[string]string{"app": "web"}
	var proc *controllerProcess
	var rec *recorder.Recorder
	var originals []string

	BeforeAll(func() {
		var err error
		rec, err = recorder.Start(watcher)
		Expect(err).NotTo(HaveOccurred())
		proc = installController(ctx)
		Expect(kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(kube.Create(ctx, rotationPool(pool))).To(Succeed())
		Expect(kube.Create(ctx, &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
			Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: app}},
		})).To(Succeed())
		Expect(kube.Create(ctx, webDeployment(ns, pool, app))).To(Succeed())
		DeferCleanup(func() {
			proc.stop()
			rec.Stop()
			_ = kube.Delete(ctx, &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: pool}})
			_ = kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			_ = kube.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}})
			Eventually(func() []karpv1.NodeClaim { return claimsOf(ctx, pool) }).WithTimeout(3 * time.Minute).Should(BeEmpty())
		})
	})

	It("starts with the Deployment on two nodes", func() {
		Eventually(func() int { return healthyPods(ctx, ns, app) }).WithTimeout(2 * time.Minute).Should(Equal(4))
		for _, c := range claimsOf(ctx, pool) {
			originals = append(originals, c.Name)
		}
		Expect(originals).To(HaveLen(2))
	})

	It("rotates every original node once a policy governs the pool", func() {
		Expect(kube.Create(ctx, rotationPolicy(pool, "45s"))).To(Succeed())
		for _, name := range originals {
			// Only NotFound means the claim is gone: any other error (a
			// timeout, a throttled or refused request) says nothing about it.
			Eventually(func() error {
				return kube.Get(ctx, client.ObjectKey{Name: name}, &karpv1.NodeClaim{})
			}).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(Satisfy(apierrors.IsNotFound), "original NodeClaim %s rotated away", name)
		}
		By("stopping further rotations and letting any in flight finish")
		p := &v1alpha1.RotationPolicy{}
		Expect(kube.Get(ctx, client.ObjectKey{Name: pool}, p)).To(Succeed())
		p.Spec.AgeThreshold = "720h"
		Expect(kube.Update(ctx, p)).To(Succeed())
		Eventually(func() map[string]string { return poolOf(ctx, pool).Annotations }).WithTimeout(3 * time.Minute).
			ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation))
		Eventually(func() int { return healthyPods(ctx, ns, app) }).WithTimeout(time.Minute).Should(Equal(4))
	})

	It("rotated make-before-break, serially, with one NodeClaim per rotation and no Pod pending longer than the drain", func() {
		rotations := rotationsOf(rec, pool)
		Expect(len(rotations)).To(BeNumerically(">=", len(originals)))
		for _, name := range originals {
			Expect(rotations).To(HaveKey(name))
		}
		for claim, r := range rotations {
			GinkgoWriter.Printf("rotation %s: surge node %s Ready rv %d, old claim deleted rv %d, drain %s, NodeClaims created %v\n",
				claim, r.surgeNode, r.surgeReadyRV, r.deleteRV, r.drain.Round(10*time.Millisecond), r.created)
			Expect(r.surgeReadyRV).NotTo(BeZero(), "rotation %s: the surge node became Ready", claim)
			Expect(r.surgeReadyRV).To(BeNumerically("<", r.deleteRV), "rotation %s: replacement Ready before the old claim's deletionTimestamp", claim)
			Expect(r.created).To(HaveLen(1), "rotation %s: Karpenter created exactly one NodeClaim", claim)
		}
		Expect(maxInFlight(rec, pool)).To(Equal(1), "at most one rotation in flight per pool")
		longestDrain, firstStart := time.Duration(0), int64(0)
		for _, r := range rotations {
			longestDrain = max(longestDrain, r.drain)
			if firstStart == 0 || r.startRV < firstStart {
				firstStart = r.startRV
			}
		}
		pending, pods := longestPending(rec, ns, firstStart, time.Now())
		GinkgoWriter.Printf("longest Pod pending %s over %d Pods created during the rotations, longest drain %s\n",
			pending.Round(10*time.Millisecond), pods, longestDrain.Round(10*time.Millisecond))
		Expect(pods).To(BeNumerically(">", 0), "the drains evicted Pods, so their replacements were created during the rotations: none seen means the bound below is vacuous")
		Expect(pending).To(BeNumerically("<=", longestDrain+time.Second))

		By("leaving no rotation annotation behind")
		a := poolOf(ctx, pool).Annotations
		for _, k := range v1alpha1.RotationScoped {
			Expect(a).NotTo(HaveKey(k))
		}
		for _, c := range claimsOf(ctx, pool) {
			Expect(c.Annotations).NotTo(HaveKey(v1alpha1.AnnotationState))
		}
		nodes := &corev1.NodeList{}
		Expect(kube.List(ctx, nodes, client.HasLabels{v1alpha1.LabelSurgeFor})).To(Succeed())
		Expect(nodes.Items).To(BeEmpty())
	})
})

func rotationPool(name string) *karpv1.NodePool {
	np := smokeNodePool(name)
	np.Labels = map[string]string{"e2e": name}
	np.Spec.Template.Spec.Requirements[3].Values = []string{"4"}
	np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("2h")
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 2 * time.Minute}
	np.Spec.Disruption = karpv1.Disruption{ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmpty, ConsolidateAfter: karpv1.MustParseNillableDuration("10s")}
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("12")}
	return np
}

func rotationPolicy(name, age string) *v1alpha1.RotationPolicy {
	return &v1alpha1.RotationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RotationPolicySpec{
			NodePoolSelector: metav1.LabelSelector{MatchLabels: map[string]string{"e2e": name}},
			AgeThreshold:     age,
			MaintenanceWindows: []v1alpha1.MaintenanceWindow{{
				Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}, Start: "00:00", End: "24:00",
			}},
			Surge: v1alpha1.SurgeSpec{ReadyTimeout: "3m", CooldownAfter: "0s", RetryBackoff: "5m"},
		},
	}
}

func webDeployment(ns, pool string, app map[string]string) *appsv1.Deployment {
	d := smokeDeployment(ns, pool, app)
	d.Name = "web"
	d.Spec.Replicas = ptr.To(int32(4))
	return d
}

func poolOf(ctx context.Context, name string) *karpv1.NodePool {
	np := &karpv1.NodePool{}
	Expect(kube.Get(ctx, client.ObjectKey{Name: name}, np)).To(Succeed())
	return np
}
