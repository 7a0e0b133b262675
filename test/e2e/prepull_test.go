//go:build e2e

package e2e_test

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/prepull"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// The pre-pull phase on real Karpenter (docs/design.md#pre-pull). kwok's
// nodes pull nothing and its Pods never end, so this checks the mechanism:
// the Pod on the surge node with exactly the old node's workload images,
// the placeholder kept and the old claim not deleted while it runs, the
// phase ended (every container reported running, or prePull.timeout),
// then the Pod and the placeholder deleted before the old claim, and the
// rotation completed with the phase's record.
var _ = Describe("pre-pull on real Karpenter", Label("prepull"), Ordered, func() {
	ctx := context.Background()
	s := newScenario("prepull-e2e", fixtures.RotationPool("prepull-e2e"), 4, 1)
	var ctrl *controller
	const phase = 20 * time.Second

	BeforeAll(func() {
		installPrerequisites(ctx)
		s.setUp(ctx)
		ctrl = startController("prepull")
	})

	It("pulls onto the surge node before the drain, holds the drain for the phase, and cleans up after it", func() {
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
		Expect(pod.Spec.Containers).To(HaveLen(1))
		Expect(pod.Spec.Containers[0].Image).To(Equal(fixtures.PauseImage), "the Deployment's image (already normalized); the DaemonSets' are not taken")
		Expect(pod.OwnerReferences).To(ConsistOf(HaveField("UID", ph.UID)), "the placeholder's dependent")

		By("ending the phase, and deleting the old claim only after it")
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
		// kwok reports the container running (its image "pulled") or
		// nothing: the phase ends as soon as every image is on the node, or
		// at its timeout
		Expect(rec.Ended).To(BeElementOf(v1alpha1.PrePullSucceeded, v1alpha1.PrePullTimeout))
		if rec.Ended == v1alpha1.PrePullSucceeded {
			Expect(rec.Pulled).To(Equal(1))
		} else {
			Expect(rec.Wait).To(BeNumerically(">=", phase))
		}
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
