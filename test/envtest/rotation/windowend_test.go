package rotation_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// Window end (docs/design.md#window-end): a due claim in an occurrence
// that closes in five minutes, with a 20m forecast and startCutoff 0s, is
// not started; the pool takes idle.window-ending and writes no anchor.
var _ = Describe("the window-end gate", func() {
	It("starts no rotation that its forecast says would outlast the window", func() {
		const pool, claim = "closing", "closing-old"
		createClaim(fk.Claim{Pool: pool, Name: claim, Zone: "zone-a"})
		now := time.Now().UTC()
		createPoolWith(pool, poolOptions{
			surge: v1alpha1.SurgeSpec{ReadyTimeout: "15m", StartCutoff: "0s", ProvisioningEstimate: "10m", DrainEstimate: "10m"},
			policy: func(p *v1alpha1.RotationPolicy) {
				w := &p.Spec.MaintenanceWindows[0]
				w.Start, w.End = now.Add(-2*time.Hour).Format("15:04"), now.Add(6*time.Minute).Format("15:04")
			},
		})
		assertsTransition(pool, "idle.window-ending")
		Consistently(poolAnnotations(pool), 3*time.Second).ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation), "held: at most 6m left for a 20m forecast")
		Expect(placeholder(claim)).To(BeNil())
	})
})
