package rotation_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// removeClaimAnnotation drops one annotation from a NodeClaim.
func removeClaimAnnotation(name, key string) {
	GinkgoHelper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, key))
	Expect(env.Client.Patch(ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

// Manual controls (docs/design.md#manual-controls) on a real API server.
var _ = Describe("an operator's manual controls", func() {
	It("rotates a claim marked rotate-next before its age threshold, ahead of the others", func() {
		const pool, plain, asked = "asked", "asked-plain", "asked-next"
		createClaim(fk.Claim{Pool: pool, Name: plain, Zone: "zone-a"})
		createClaim(fk.Claim{Pool: pool, Name: asked, Zone: "zone-a", Annotations: map[string]string{v1alpha1.AnnotationRotateNext: "true"}})
		createPoolWith(pool, poolOptions{surge: v1alpha1.SurgeSpec{ReadyTimeout: "1h"}, policy: func(p *v1alpha1.RotationPolicy) {
			p.Spec.AgeThreshold = "700h" // nothing is due by age
		}})
		Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, asked))
		assertsTransition(pool, "idle.start-requested")
		// said by the pass whose anchor write started it: once, whichever instance
		Eventually(func() []string { return eventMessages(asked, "RotationRequested") }, timeout).Should(ConsistOf(ContainSubstring(v1alpha1.AnnotationRotateNext)))
		Expect(placeholder(plain)).To(BeNil())
	})

	It("never takes a claim before its skip-until, and takes it once the skip is lifted", func() {
		const pool, claim = "skipping", "skipping-old"
		createClaim(fk.Claim{Pool: pool, Name: claim, Zone: "zone-a", Annotations: map[string]string{
			v1alpha1.AnnotationSkipUntil: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}})
		createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "1h"}, nil)
		assertsTransition(pool, "idle.skip-held")
		// one per instance: the suite runs two, each says it once
		Eventually(func() []string { return eventMessages(pool, "SkipHeld") }, timeout).Should(And(Not(BeEmpty()), HaveEach(ContainSubstring("keeps out "+claim+" until "))))
		Consistently(poolAnnotations(pool), 3*time.Second).ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation))
		removeClaimAnnotation(claim, v1alpha1.AnnotationSkipUntil)
		Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, claim))
	})

	It("starts nothing while a blackout is in force", func() {
		const pool, claim = "blacked", "blacked-old"
		createClaim(fk.Claim{Pool: pool, Name: claim, Zone: "zone-a"})
		now := time.Now().UTC()
		createPoolWith(pool, poolOptions{surge: v1alpha1.SurgeSpec{ReadyTimeout: "1h"}, policy: func(p *v1alpha1.RotationPolicy) {
			p.Spec.Blackouts = []v1alpha1.Blackout{{Start: now.Add(-time.Hour).Format(time.RFC3339), End: now.Add(time.Hour).Format(time.RFC3339), Reason: "launch week"}}
		}})
		assertsTransition(pool, "idle.gated")
		Consistently(poolAnnotations(pool), 3*time.Second).ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation), "the blackout holds the start")
	})
})
