package rotation_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/prepull"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// prePullImage is the controller's own image as the envtest controllers
// are told it (-prepull-image).
const prePullImage = "registry.example/node-rotation-controller:envtest"

func prePullPod(claim string) *corev1.Pod { return prePullPodIn(controllerNS, claim) }

// prePullPodIn is the claim's pre-pull Pod in namespace ns, nil when none.
func prePullPodIn(ns, claim string) *corev1.Pod {
	p := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: prepull.PodName(claim)}, p); err != nil {
		return nil
	}
	return p
}

func prePullPodExists(claim string) func() bool {
	return func() bool { return prePullPod(claim) != nil }
}

func prePullPodExistsIn(ns, claim string) func() bool {
	return func() bool { return prePullPodIn(ns, claim) != nil }
}

// succeed ends a pre-pull Pod as the kubelet would once every container
// ran (envtest runs none).
func succeed(pod *corev1.Pod) {
	GinkgoHelper()
	pod.Status.Phase = corev1.PodSucceeded
	pod.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: "sha256:x",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}})
	}
	Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
}

// prePullRecord is the pool's record of the phase, zero while there is none.
func prePullRecord(pool string) func() v1alpha1.PrePullRecord {
	return func() v1alpha1.PrePullRecord {
		r, _ := v1alpha1.ParsePrePullRecord(getPool(pool).Annotations[v1alpha1.AnnotationPrePull])
		return r
	}
}

// prePullWorld is one pool mid-rotation with the phase on: its old claim
// runs two workloads (their images the phase pulls) and a DaemonSet Pod
// (which the surge node runs anyway), and Karpenter has just put the
// placeholder on a surge node.
func prePullWorld(pool, phaseTimeout string) (old, surgeNode string) {
	GinkgoHelper()
	return prePullWorldWith(pool, v1alpha1.PrePullSpec{Enabled: true, Timeout: phaseTimeout})
}

// pullSecret is the Secret the sidecar's Pod pulls with in
// prePullWorldWith when the policy uses pull secrets.
const pullSecret = "team-registry"

// prePullWorldWith is prePullWorld with the policy's spec.prePull; with
// usePullSecrets the sidecar's Pod pulls with imagePullSecrets.
func prePullWorldWith(pool string, spec v1alpha1.PrePullSpec) (old, surgeNode string) {
	GinkgoHelper()
	old, surgeClaim := pool+"-old", pool+"-surge"
	createClaim(fk.Claim{Pool: pool, Name: old, Zone: "zone-a", CPU: "4"})
	for name, image := range map[string]string{"app": "example.com/team/app:1", "sidecar": "example.com/team/sidecar:2"} {
		_, err := karpenter.RunPod(ctx, workloadNS, pool+"-"+name, fk.NodeName(old), "500m", func(p *corev1.Pod) {
			p.Spec.Containers[0].Image = image
			if name == "sidecar" && spec.UsePullSecrets {
				p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: pullSecret}}
			}
		})
		Expect(err).NotTo(HaveOccurred())
	}
	_, err := karpenter.RunPod(ctx, workloadNS, pool+"-ds", fk.NodeName(old), "100m", func(p *corev1.Pod) {
		p.Spec.Containers[0].Image = "example.com/agent:3"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: ptr.To(true)}}
	})
	Expect(err).NotTo(HaveOccurred())
	createPoolWith(pool, poolOptions{surge: v1alpha1.SurgeSpec{ReadyTimeout: "5m", CooldownAfter: "1h"},
		policy: func(p *v1alpha1.RotationPolicy) { p.Spec.PrePull = spec }})
	Eventually(placeholderExists(old), timeout).Should(BeTrue())
	createClaim(fk.Claim{Pool: pool, Name: surgeClaim, Zone: "zone-a", CPU: "4"})
	Expect(karpenter.BindAndRun(ctx, placeholder(old), fk.NodeName(surgeClaim))).To(Succeed())
	return old, fk.NodeName(surgeClaim)
}

var _ = Describe("the pre-pull phase (docs/design.md#pre-pull)", func() {
	It("pulls the moving Pods' images onto the surge node before the drain, keeps the placeholder meanwhile, and starts the drain when the Pod ends", func() {
		const pool = "prepull"
		old, surgeNode := prePullWorld(pool, "10m")

		By("keeping the placeholder at surge-ready and creating the pre-pull Pod on the surge node")
		Eventually(claimAnnotations(old), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationState, v1alpha1.StateDraining))
		Eventually(prePullPodExists(old), timeout).Should(BeTrue())
		pod, ph := prePullPod(old), placeholder(old)
		Expect(ph).NotTo(BeNil(), "the placeholder holds the room during the phase")
		Expect(pod.Spec.NodeName).To(Equal(surgeNode))
		var images []string
		for _, c := range pod.Spec.Containers {
			images = append(images, c.Image)
		}
		Expect(images).To(ConsistOf("example.com/team/app:1", "example.com/team/sidecar:2"), "the moving Pods' images, not the DaemonSet's")
		Expect(pod.Spec.InitContainers).To(HaveLen(1))
		Expect(pod.Spec.InitContainers[0].Image).To(Equal(prePullImage))
		Expect(pod.OwnerReferences).To(ConsistOf(HaveField("UID", ph.UID)), "the placeholder's dependent")
		Expect(pod.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
		Expect(*pod.Spec.ActiveDeadlineSeconds).To(BeNumerically("==", 600))
		Expect(*pod.Spec.Priority).To(BeNumerically("==", -10), "the placeholder's PriorityClass")
		assertsTransition(pool, "pending.surge-ready-prepull", "draining.prepull")

		By("not deleting the old claim while the Pod pulls")
		Consistently(func() []any { return []any{claimDeleting(old)(), placeholderExists(old)()} }, 3*time.Second).
			Should(Equal([]any{false, true}), "claim deleting, placeholder present")
		Expect(eventCount(old, "PrePullStarted")()).To(BeNumerically("==", 1), "said once, by the pass whose create took effect")

		By("the kubelet running every container: the end recorded, the Pod and the placeholder deleted, then the old claim")
		succeed(prePullPod(old))
		Eventually(prePullRecord(pool), timeout).Should(And(HaveField("Ended", v1alpha1.PrePullSucceeded), HaveField("Pulled", 2),
			HaveField("Failed", 0), HaveField("Unfinished", 0), HaveField("Skipped", 0)))
		Eventually(prePullPodExists(old), timeout).Should(BeFalse())
		Eventually(placeholderExists(old), timeout).Should(BeFalse())
		Eventually(claimDeleting(old), timeout).Should(BeTrue())
		assertsTransition(pool, "draining.prepull-end")
		Eventually(eventCount(old, "PrePullEnded"), timeout).Should(BeNumerically("==", 1))
		Expect(eventCount(old, "PrePullImagesFailed")()).To(BeZero())

		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty(), "the record goes with the rotation's keys")
		Eventually(poolAnnotations(pool), timeout).Should(HaveKey(v1alpha1.AnnotationLastRotationAt), "a success")
	})

	It("starts the drain at prePull.timeout when the Pod is still pulling, naming nothing it did not try", func() {
		const pool = "prepull-timeout"
		old, _ := prePullWorld(pool, "4s")
		Eventually(prePullPodExists(old), timeout).Should(BeTrue())
		// no kubelet: the Pod never starts a container
		Eventually(prePullRecord(pool), timeout).Should(And(HaveField("Ended", v1alpha1.PrePullTimeout), HaveField("Unfinished", 2), HaveField("Pulled", 0)))
		Expect(prePullRecord(pool)().Wait).To(BeNumerically(">=", 4*time.Second))
		Eventually(prePullPodExists(old), timeout).Should(BeFalse())
		Eventually(claimDeleting(old), timeout).Should(BeTrue())
		assertsTransition(pool, "draining.prepull-end")
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
	})

	It("rolls back on a governance loss during the phase: the placeholder deleted, and with it, by the garbage collector, the Pod that depends on it", func() {
		const pool = "prepull-lost"
		old, surgeNode := prePullWorld(pool, "10m")
		Eventually(prePullPodExists(old), timeout).Should(BeTrue())
		ph := placeholder(old)
		Expect(env.Client.Delete(ctx, &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: pool}})).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty(), "the anchor and the rotation's keys, the phase's record among them, cleared")
		Eventually(placeholderExists(old), timeout).Should(BeFalse())
		Eventually(unfrozen(surgeNode), timeout).Should(BeTrue())
		Expect(claimDeleting(old)()).To(BeFalse(), "a rollback: the old claim is kept")
		// envtest runs no garbage collector: the Pod is left as the
		// collector finds it, the dependent of the placeholder just deleted
		if pod := prePullPod(old); pod != nil {
			Expect(pod.OwnerReferences).To(ConsistOf(HaveField("UID", ph.UID)))
		}
		assertsTransition(pool, "draining.governance-lost")
	})

	It("ends the phase at once when Karpenter deletes the old claim during it, so the drain finds the room", func() {
		const pool = "prepull-cut"
		old, _ := prePullWorld(pool, "10m")
		Eventually(prePullPodExists(old), timeout).Should(BeTrue())
		Expect(env.Client.Delete(ctx, getClaim(old))).To(Succeed()) // Karpenter's expiry: its finalizer holds the claim
		Eventually(prePullRecord(pool), timeout).Should(HaveField("Ended", v1alpha1.PrePullCut))
		Eventually(prePullPodExists(old), timeout).Should(BeFalse())
		Eventually(placeholderExists(old), timeout).Should(BeFalse(), "the placeholder's room is the drained Pods'")
		assertsTransition(pool, "draining.prepull-end")
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
	})
})

// usePullSecrets takes effect only in a controller run with
// -prepull-use-pull-secrets: a world of its own, whose controllers cache
// their Pods in every namespace as the chart's prePull.usePullSecrets
// runs them; every other world runs the default.
var _ = Describe("the pre-pull phase with usePullSecrets (docs/design.md#pre-pull-secrets)", Ordered, func() {
	BeforeAll(func() {
		pullSecretsWorld = true
		w := startWorld("pull-secrets", false)
		pullSecretsWorld = false
		w.use()
		DeferCleanup(func() {
			mainWorld.use()
			w.stop()
		})
	})

	It("with usePullSecrets, pulls the image whose Pod needs its imagePullSecrets by a Pod in that Pod's namespace, with them, and deletes it at the phase's end", func() {
		const pool = "prepull-secrets"
		old, surgeNode := prePullWorldWith(pool, v1alpha1.PrePullSpec{Enabled: true, Timeout: "10m", UsePullSecrets: true})

		By("creating a Pod beside the placeholder for the image pulled without secrets, and one in the sidecar's namespace for its image")
		Eventually(prePullPodExists(old), timeout).Should(BeTrue())
		Eventually(prePullPodExistsIn(workloadNS, old), timeout).Should(BeTrue())
		home, elsewhere := prePullPod(old), prePullPodIn(workloadNS, old)
		Expect(home.Spec.Containers).To(ConsistOf(HaveField("Image", "example.com/team/app:1")))
		Expect(elsewhere.Spec.Containers).To(ConsistOf(HaveField("Image", "example.com/team/sidecar:2")))
		Expect(elsewhere.Spec.ImagePullSecrets).To(Equal([]corev1.LocalObjectReference{{Name: pullSecret}}), "the source Pod's secrets, usable only in its namespace")
		Expect(elsewhere.Spec.NodeName).To(Equal(surgeNode))
		Expect(elsewhere.OwnerReferences).To(ConsistOf(And(HaveField("Kind", "NodeClaim"), HaveField("UID", getClaim(old).UID))),
			"no owner across namespaces: the old claim's dependent, deleted by the rotation itself")
		Expect(eventCount(old, "PrePullStarted")()).To(BeNumerically("==", 1))

		By("waiting for both: one ended is not the phase's end")
		succeed(home)
		Consistently(func() []any { return []any{claimDeleting(old)(), prePullRecord(pool)().Ended} }, 3*time.Second).
			Should(Equal([]any{false, ""}), "the drain waits for the other Pod")

		By("both ended: the record counts both, and both Pods are deleted before the old claim")
		succeed(prePullPodIn(workloadNS, old))
		Eventually(prePullRecord(pool), timeout).Should(And(HaveField("Ended", v1alpha1.PrePullSucceeded), HaveField("Pulled", 2)))
		Eventually(prePullPodExistsIn(workloadNS, old), timeout).Should(BeFalse(), "deleted by the phase's end, not left to a garbage collector")
		Eventually(prePullPodExists(old), timeout).Should(BeFalse())
		Eventually(claimDeleting(old), timeout).Should(BeTrue())
		Consistently(eventCount(old, "PrePullStarted"), 2*time.Second).Should(BeNumerically("==", 1), "said once, by the pass whose creates took effect")
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
	})

	It("with usePullSecrets, rolls back on a governance loss during the phase: the Pod outside the controller's namespace is deleted with the placeholder", func() {
		const pool = "prepull-secrets-lost"
		old, _ := prePullWorldWith(pool, v1alpha1.PrePullSpec{Enabled: true, Timeout: "10m", UsePullSecrets: true})
		Eventually(prePullPodExistsIn(workloadNS, old), timeout).Should(BeTrue())
		Expect(env.Client.Delete(ctx, &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: pool}})).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		Eventually(placeholderExists(old), timeout).Should(BeFalse())
		// envtest runs no garbage collector: only the rollback's own delete
		// removes it (the one beside the placeholder is the collector's)
		Eventually(prePullPodExistsIn(workloadNS, old), timeout).Should(BeFalse())
		Expect(claimDeleting(old)()).To(BeFalse(), "a rollback: the old claim is kept")
		assertsTransition(pool, "draining.governance-lost")
	})

	It("with usePullSecrets, ends with the Pods it could make when the API server refuses one, its images counted failed and named", func() {
		const pool = "prepull-secrets-refused"
		refuseInWorkloadNS()
		old, _ := prePullWorldWith(pool, v1alpha1.PrePullSpec{Enabled: true, Timeout: "10m", UsePullSecrets: true})

		By("making the Pod beside the placeholder; the one in the sidecar's namespace refused, and said so naming it")
		Eventually(prePullPodExists(old), timeout).Should(BeTrue())
		// a level-triggered Warning: once per instance acting (docs/operations.md)
		Eventually(eventCount(old, "PrePullRefused"), timeout).Should(BeNumerically(">=", 1))
		Expect(eventMessages(old, "PrePullRefused")).To(HaveEach(ContainSubstring(workloadNS + "/" + prepull.PodName(old))))
		Expect(prePullPodExistsIn(workloadNS, old)()).To(BeFalse())

		By("ending with the Pod that exists: the refused Pod's image failed, named")
		succeed(prePullPod(old))
		Eventually(prePullRecord(pool), timeout).Should(And(HaveField("Ended", v1alpha1.PrePullFailed), HaveField("Pulled", 1), HaveField("Failed", 1)))
		Eventually(eventCount(old, "PrePullImagesFailed"), timeout).Should(BeNumerically("==", 1))
		Expect(eventMessages(old, "PrePullImagesFailed")).To(ConsistOf(ContainSubstring("example.com/team/sidecar:2")))
		Eventually(claimDeleting(old), timeout).Should(BeTrue(), "the drain starts without waiting for prePull.timeout")
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
	})
})

// refuseInWorkloadNS makes the API server refuse every pre-pull Pod in the
// workload namespace, as a tenant's admission policy would (a
// ValidatingAdmissionPolicy), for the rest of the spec.
func refuseInWorkloadNS() {
	GinkgoHelper()
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-prepull-pods"},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}},
			}}},
			Validations: []admissionv1.Validation{{Expression: "!object.metadata.name.startsWith('nrc-prepull-')", Message: "no pre-pull Pods here"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-prepull-pods"},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": workloadNS}}}},
	}
	Expect(env.Client.Create(ctx, policy)).To(Succeed())
	Expect(env.Client.Create(ctx, binding)).To(Succeed())
	DeferCleanup(func() {
		_ = env.Client.Delete(ctx, binding)
		_ = env.Client.Delete(ctx, policy)
	})
	// the API server enforces a policy once its informer has it
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: workloadNS, Name: "nrc-prepull-probe"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/probe:1"}}}}
	Eventually(func() error { return env.Client.Create(ctx, probe.DeepCopy(), client.DryRunAll) }, timeout).Should(HaveOccurred())
}
