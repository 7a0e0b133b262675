//go:build e2e

package e2e_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/prepull"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// The pre-pull phase on real Karpenter (docs/design.md#pre-pull). kwok's
// nodes pull nothing, so this checks the mechanism, on the phase's
// timeout path: the workload's Pods have an init container of an image
// whose pull never ends on the test world's kwok (fixtures.SlowPullImage),
// so the pre-pull Pod, which runs it in a container, stays Pending. The
// spec checks the Pod on the surge node with exactly the old node's
// workload images, the placeholder kept and the old claim not deleted
// until prePull.timeout has passed, the record (timeout, both images
// unfinished), then the Pod and the placeholder deleted before the old
// claim, and the rotation completed with the phase's record. The phase
// ending when every image is pulled runs in the crash campaign's
// pre-pull context (test/chaos) and in envtest.
var _ = Describe("pre-pull on real Karpenter", Label("prepull"), Ordered, func() {
	ctx := context.Background()
	s := newScenario("prepull-e2e", fixtures.RotationPool("prepull-e2e"), 4, 1)
	s.workload = func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "slow", Image: fixtures.SlowPullImage}}
	}
	var ctrl *controller
	const phase = 20 * time.Second

	BeforeAll(func() {
		installPrerequisites(ctx)
		s.setUp(ctx)
		ctrl = startController("prepull")
	})

	It("pulls onto the surge node before the drain, holds the drain until prePull.timeout, and cleans up after it", func() {
		s.govern(ctx, "30s", func(p *v1alpha1.RotationPolicy) {
			p.Spec.PrePull = v1alpha1.PrePullSpec{Enabled: true, Timeout: phase.String()}
		})
		claim := s.awaitRotation(ctx, 2*time.Minute, "a rotation starts", func(map[string]string, string) bool { return true })
		name := prepull.PodName(claim)

		By("creating the pre-pull Pod on the surge node once it is ready, with the workload's image")
		// read from the watch record: the phase may be over in a second
		// (kwok reports the container running at once), too soon to poll
		var pod, ph *corev1.Pod
		Eventually(func() bool {
			r, ok := s.rec.First("Pod", name, recorder.Added)
			if ok {
				pod = r.Obj.(*corev1.Pod)
			}
			return ok
		}).WithTimeout(3*time.Minute).WithPolling(200*time.Millisecond).Should(BeTrue(), "the pre-pull Pod is created")
		r, ok := s.rec.First("Pod", surge.PlaceholderName(claim), func(r recorder.Record) bool { return r.Obj.(*corev1.Pod).Spec.NodeName != "" })
		Expect(ok).To(BeTrue(), "the placeholder was bound")
		ph = r.Obj.(*corev1.Pod)
		Expect(pod.Spec.NodeName).To(Equal(ph.Spec.NodeName), "bound to the surge node, the placeholder's")
		Expect(pod.Spec.Containers).To(HaveLen(2))
		Expect([]string{pod.Spec.Containers[0].Image, pod.Spec.Containers[1].Image}).To(Equal([]string{fixtures.SlowPullImage, fixtures.PauseImage}),
			"the Deployment's images, init container first (already normalized); the DaemonSets' are not taken")
		Expect(pod.OwnerReferences).To(ConsistOf(HaveField("UID", ph.UID)), "the placeholder's dependent")

		By("holding the drain while the Pod pulls: the old claim is not deleted before prePull.timeout")
		Consistently(func() bool {
			c := &karpv1.NodeClaim{}
			return kube.Get(ctx, client.ObjectKey{Name: claim}, c) == nil && c.DeletionTimestamp == nil
		}).WithTimeout(phase/2).WithPolling(time.Second).Should(BeTrue(), "the old claim is kept while the phase runs")
		live := &corev1.Pod{}
		Expect(kube.Get(ctx, client.ObjectKey{Namespace: fixtures.ControllerNamespace, Name: name}, live)).To(Succeed())
		Expect(live.Status.ContainerStatuses).To(BeEmpty(), "kwok never reports the slow image pulled")

		By("ending the phase at its timeout, and deleting the old claim only after it")
		Eventually(gone(ctx, claim)).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(Satisfy(notFound), "the rotation completes")
		s.pause(ctx, 3*time.Minute)

		recorded := s.rec.FirstRV("NodePool", s.name, recorder.Annotated(v1alpha1.AnnotationPrePull))
		created := s.rec.FirstRV("Pod", name, recorder.Added)
		deleting := s.rec.FirstRV("NodeClaim", claim, recorder.Deleting)
		podGone := s.rec.FirstRV("Pod", name, recorder.Deleted)
		phGone := s.rec.FirstRV("Pod", surge.PlaceholderName(claim), recorder.Deleted) // kept until the phase ends
		GinkgoWriter.Printf("pre-pull Pod created rv %d, end recorded rv %d, Pod gone rv %d, placeholder gone rv %d, old claim deleting rv %d\n",
			created, recorded, podGone, phGone, deleting)
		Expect(created).NotTo(BeZero())
		Expect(recorded).To(BeNumerically(">", created), "the end is recorded after the Pod ran")
		Expect(podGone).To(And(BeNumerically(">", recorded), BeNumerically("<", deleting)), "the Pod is gone before the old claim's delete")
		Expect(phGone).To(And(BeNumerically(">", recorded), BeNumerically("<", deleting)), "the placeholder is kept until the phase ends")
		first, _ := s.rec.First("NodePool", s.name, recorder.Annotated(v1alpha1.AnnotationPrePull))
		rec, err := v1alpha1.ParsePrePullRecord(first.Obj.GetAnnotations()[v1alpha1.AnnotationPrePull])
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("pre-pull record: %s\n", rec)
		Expect(rec.Ended).To(Equal(v1alpha1.PrePullTimeout))
		Expect(rec.Wait).To(BeNumerically(">=", phase))
		Expect([]int{rec.Pulled, rec.Failed, rec.Unfinished}).To(Equal([]int{0, 0, 2}), "both images unfinished: the Pod never started")
		drainingAt, ok := s.rec.First("NodePool", s.name, recorder.Annotated(v1alpha1.AnnotationDrainingAt))
		Expect(ok).To(BeTrue())
		at, err := time.Parse(time.RFC3339, drainingAt.Obj.GetAnnotations()[v1alpha1.AnnotationDrainingAt])
		Expect(err).NotTo(HaveOccurred())
		deleted, ok := s.rec.First("NodeClaim", claim, recorder.Deleting)
		Expect(ok).To(BeTrue())
		Expect(deleted.Obj.GetDeletionTimestamp().Time).To(BeTemporally(">=", at.Add(phase)), "the drain starts no sooner than prePull.timeout after draining-at")
		Expect(kube.Get(ctx, client.ObjectKey{Namespace: fixtures.ControllerNamespace, Name: name}, &corev1.Pod{})).To(Satisfy(apierrors.IsNotFound))

		By("announcing the phase once each way, and carrying its record on the completion line")
		Expect(ctrl.LogLines(`"pre-pull started"`)).NotTo(BeEmpty())
		Expect(ctrl.LogLines(`"pre-pull ended"`)).NotTo(BeEmpty())
		Expect(events(ctx, "PrePullStarted", claim)).To(Equal(1))
		Expect(events(ctx, "PrePullEnded", claim)).To(Equal(1))
		var withRecord int
		for _, l := range ctrl.LogLines(`"rotation complete"`) {
			var line map[string]any
			Expect(json.Unmarshal([]byte(l), &line)).To(Succeed())
			if line["nodeclaim"] == claim || line["rotation"] == claim {
				Expect(line).To(HaveKey("prePull"))
				withRecord++
			}
		}
		Expect(withRecord).To(Equal(1), "the rotation's completion line carries the record")
	})
})
