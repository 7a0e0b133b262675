package rotation_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// The NodePool's own budget bounds the rotations
// (docs/design.md#disruption-budget): a scheduled nodes "0" budget in
// force holds a due claim's start (idle.disruption-budget), said once with
// a DisruptionBudget Event naming the budget and its end; at that end the
// pool is woken and the rotation starts.
var _ = Describe("a NodePool disruption budget of 0", func() {
	It("holds the start while it is in force and lets it start when its duration ends", func() {
		const name, old = "budgeted", "budgeted-old"
		// Karpenter's schedules have a minute's grain and its durations
		// whole minutes: an occurrence that began this minute ends at the
		// next minute (or the one after, past 25 s), 35 to 95 s from now.
		now := time.Now().UTC()
		d := time.Minute
		if now.Second() > 25 {
			d = 2 * time.Minute
		}
		schedule := fmt.Sprintf("%d %d * * *", now.Minute(), now.Hour())
		ends := now.Truncate(time.Minute).Add(d)
		createClaim(fk.Claim{Pool: name, Name: old, Zone: "zone-a"})
		createPoolWith(name, poolOptions{surge: v1alpha1.SurgeSpec{ReadyTimeout: "1h"}, pool: func(np *karpv1.NodePool) {
			np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0", Schedule: &schedule, Duration: &metav1.Duration{Duration: d}}}
		}})
		assertsTransition(name, "idle.disruption-budget")
		Expect(time.Now()).To(BeTemporally("<", ends), "the budget was still in force when the pool was held")
		Expect(poolAnnotations(name)()).NotTo(HaveKey(v1alpha1.AnnotationActiveRotation), "held: no rotation started under the budget")
		Eventually(func() []string { return eventMessages(name, "DisruptionBudget") }, timeout).Should(ContainElement(ContainSubstring(
			fmt.Sprintf("NodePool budget nodes=0 (schedule %q for %s), until %s", schedule, map[time.Duration]string{time.Minute: "1m", 2 * time.Minute: "2m"}[d], ends.Format("2006-01-02 15:04 UTC")))))
		expectAnnouncedOncePerActor(name, "DisruptionBudget")
		Eventually(scrape("noderotation_start_gate", series(name, "gate", "disruptionBudget")), timeout).Should(Equal(1.0))
		Expect(scrape("noderotation_start_gate", series(name, "gate", "open"))()).To(Equal(0.0))
		Expect(time.Now()).To(BeTemporally("<", ends), "the announcement and the gauge were checked while the budget held")
		Expect(poolAnnotations(name)()).NotTo(HaveKey(v1alpha1.AnnotationActiveRotation))
		By("the budget's duration ending: the pool is woken at its end and the rotation starts")
		Eventually(poolAnnotations(name), time.Until(ends)+timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, old))
		Eventually(claimAnnotations(old), timeout).Should(HaveKey(v1alpha1.AnnotationStartedAt))
		started, err := time.Parse(time.RFC3339, claimAnnotations(old)()[v1alpha1.AnnotationStartedAt])
		Expect(err).NotTo(HaveOccurred())
		Expect(started).To(BeTemporally(">=", ends), "started only once the budget was over")
	})
})

// budget gives the NodePool one budget of nodes, for a pool rotating
// several at once (Karpenter's default 10% of a few claims is 1).
func budget(nodes string) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: nodes}} }
}
