//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/test/fixtures"
)

// The smoke proves the test world behaves like a cluster running Karpenter:
// provisioning for pending pods, a voluntary NodeClaim delete drained through
// the Eviction API with a PDB respected, and a node provisioned for a
// negative-priority, never-preempting pod — the placeholder's shape
// (docs/design.md#surge).
var _ = Describe("the local cluster", Label("smoke"), Ordered, func() {
	const pool = "smoke"
	ctx := context.Background()
	ns := fmt.Sprintf("smoke-%d", time.Now().Unix())
	app := map[string]string{"app": "smoke"}

	BeforeAll(func() {
		Expect(kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
		Expect(kube.Create(ctx, fixtures.NodePool(pool, "8"))).To(Succeed())
		DeferCleanup(func() {
			_ = kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			_ = kube.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool}})
			_ = kube.Delete(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "smoke-placeholder"}})
			Eventually(func() []karpv1.NodeClaim { return claimsOf(ctx, pool) }).
				WithTimeout(2 * time.Minute).Should(BeEmpty())
		})
	})

	It("provisions a node for pods that fit no node", func() {
		start := time.Now()
		Expect(kube.Create(ctx, fixtures.PDB(ns, "smoke", 1, app))).To(Succeed())
		Expect(kube.Create(ctx, fixtures.Workload(ns, "smoke", pool, 3, "1500m", app))).To(Succeed())
		Eventually(func() int { return len(claimsOf(ctx, pool)) }).WithTimeout(time.Minute).Should(BeNumerically(">=", 1))
		GinkgoWriter.Printf("first NodeClaim after %s\n", time.Since(start).Round(10*time.Millisecond))
		Eventually(func() int { return healthyPods(ctx, ns, app) }).WithTimeout(2 * time.Minute).Should(Equal(3))
		GinkgoWriter.Printf("3 pods Ready after %s\n", time.Since(start).Round(10*time.Millisecond))
	})

	It("drains a deleted NodeClaim through evictions, respecting the PDB", func() {
		// The victim is the claim whose node hosts the Pods, once that node
		// has booted (the cluster may delay node readiness).
		pods := &corev1.PodList{}
		Expect(kube.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(app))).To(Succeed())
		Expect(pods.Items).NotTo(BeEmpty())
		var victim karpv1.NodeClaim
		Eventually(func() bool {
			for _, c := range claimsOf(ctx, pool) {
				if c.Status.NodeName == pods.Items[0].Spec.NodeName {
					victim = c
				}
			}
			n := &corev1.Node{}
			return victim.Name != "" && kube.Get(ctx, client.ObjectKey{Name: victim.Status.NodeName}, n) == nil && nodeReady(n)
		}).WithTimeout(time.Minute).Should(BeTrue())
		start := time.Now()
		Expect(kube.Delete(ctx, &victim)).To(Succeed())

		minHealthy := 3
		Eventually(func() bool {
			if h := healthyPods(ctx, ns, app); h < minHealthy {
				minHealthy = h
			}
			err := kube.Get(ctx, client.ObjectKeyFromObject(&victim), &karpv1.NodeClaim{})
			return apierrors.IsNotFound(err)
		}).WithTimeout(3 * time.Minute).WithPolling(100 * time.Millisecond).Should(BeTrue())
		GinkgoWriter.Printf("NodeClaim %s drained and gone after %s (lowest healthy count %d)\n",
			victim.Name, time.Since(start).Round(10*time.Millisecond), minHealthy)
		Expect(minHealthy).To(BeNumerically(">=", 2), "the PDB allows at most one unavailable pod")
		Eventually(func() int { return healthyPods(ctx, ns, app) }).WithTimeout(2 * time.Minute).Should(Equal(3))
		Expect(kube.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(app))).To(Succeed())
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				Expect(p.Spec.NodeName).NotTo(Equal(victim.Status.NodeName))
			}
		}
	})

	It("provisions a node for a negative-priority pod that never preempts", func() {
		Expect(kube.Create(ctx, &schedulingv1.PriorityClass{
			ObjectMeta:       metav1.ObjectMeta{Name: "smoke-placeholder"},
			Value:            -10,
			PreemptionPolicy: ptr.To(corev1.PreemptNever),
		})).To(Succeed())
		before := len(claimsOf(ctx, pool))
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "placeholder", Namespace: ns},
			Spec: corev1.PodSpec{
				PriorityClassName: "smoke-placeholder",
				NodeSelector:      map[string]string{karpv1.NodePoolLabelKey: pool},
				// The scheduler may bind the Pod the moment Karpenter lifts
				// karpenter.sh/unregistered, while the taint-eviction
				// controller's cache still shows that NoExecute taint: it
				// then deletes the Pod at once (seen on v1.0.8, 2026-12-05).
				// Tolerating the taint takes that upstream race out of a
				// test about provisioning.
				Tolerations: []corev1.Toleration{{
					Key: karpv1.UnregisteredTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
				}},
				Containers: []corev1.Container{{
					Name: "pause", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")}},
				}},
			},
		}
		// The priority admission plugin reads PriorityClasses from the API
		// server's own cache, which may not hold the one just created yet
		// ("no PriorityClass with name … was found", seen on v1.12.1).
		Eventually(func() error {
			err := kube.Create(ctx, pod.DeepCopy())
			if apierrors.IsAlreadyExists(err) {
				return nil // an earlier try was created, its answer lost
			}
			return err
		}).WithTimeout(20 * time.Second).Should(Succeed())
		Eventually(func() corev1.PodPhase {
			_ = kube.Get(ctx, client.ObjectKeyFromObject(pod), pod)
			return pod.Status.Phase
		}).WithTimeout(2 * time.Minute).Should(Equal(corev1.PodRunning))
		Expect(len(claimsOf(ctx, pool))).To(BeNumerically(">", before))
		Expect(*pod.Spec.PreemptionPolicy).To(Equal(corev1.PreemptNever))
		Expect(*pod.Spec.Priority).To(BeNumerically("==", -10))
	})
})

func claimsOf(ctx context.Context, pool string) []karpv1.NodeClaim {
	list := &karpv1.NodeClaimList{}
	Expect(kube.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})).To(Succeed())
	return list.Items
}

// healthyPods counts the Pods the disruption controller counts as healthy:
// Ready and not terminating.
func healthyPods(ctx context.Context, ns string, labels map[string]string) int {
	n, err := fixtures.HealthyPods(ctx, kube, ns, labels)
	Expect(err).NotTo(HaveOccurred())
	return n
}
