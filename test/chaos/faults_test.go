//go:build e2e

package chaos_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/test/apiproxy"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/invariants"
)

// The fault run: the controller rotates every original node of a pool,
// three at once (maxUnavailable 3, docs/design.md#throughput), while the
// proxy fails 15 % of its writes — refused with 500 or 429 + Retry-After,
// or applied and then answered 500 — and delays a tenth of its reads.
// Every rotation must still finish with every invariant held, never more
// than three at once.
var _ = Describe("fault run", Label("faults"), Ordered, func() {
	const pool = "chaos-faults"
	faults := apiproxy.Faults{Seed: 16, Fail500: 0.07, Throttle429: 0.04, ApplyThen500: 0.04, DelayGets: 0.1, Delay: 300 * time.Millisecond}
	var (
		w         *world
		sinceRV   int64
		seq0      int
		originals []string
		before    apiproxy.Counts
		start     time.Time
		report    *invariants.Report
	)

	BeforeAll(func(ctx SpecContext) {
		start = time.Now()
		w = newWorld(ctx, pool, 4, 3)
		w.ctl = newController()
		sinceRV, seq0 = revision(ctx), proxy.Seq()
		originals = w.claimNames(ctx)
		before = proxy.Counts()
		proxy.SetFaults(faults)
		DeferCleanup(func() { proxy.SetFaults(apiproxy.Faults{}) })
		w.ctl.start()
		DeferCleanup(w.ctl.stop)
	}, NodeTimeout(6*time.Minute))

	AfterEach(func() {
		if CurrentSpecReport().Failed() && w != nil && w.ctl != nil {
			w.diagnose(sinceRV, seq0)
		}
	})

	AfterAll(func() {
		// printed whatever happened: a run that failed before its check
		// says so rather than a count of zero
		if w == nil {
			return
		}
		violations, lost := "unchecked", "unchecked"
		if report != nil {
			violations, lost = fmt.Sprint(len(report.Violations)), fmt.Sprint(len(report.Lost))
		}
		c := delta(proxy.Counts(), before)
		GinkgoWriter.Printf("chaos summary: kills=0 rotations=%d faults=%d violations=%s lost-announcements=%s (fault run in %s: %s)\n",
			len(invariants.Anchored(w.rec, []string{w.pool}, sinceRV)), c.Faults(), violations, lost, time.Since(start).Round(time.Second), c)
	})

	It("rotates every original node while its API requests fail", func(ctx SpecContext) {
		w.resume(ctx)
		for _, name := range originals {
			Eventually(func() error {
				w.ctl.alive()
				return kube.Get(ctx, client.ObjectKey{Name: name}, &karpv1.NodeClaim{})
			}).WithContext(ctx).WithTimeout(8*time.Minute).WithPolling(time.Second).Should(Satisfy(notFound), "original NodeClaim %s rotated away", name)
		}
		w.pause(ctx)
		w.quiesce(ctx, 5*time.Minute)
	}, NodeTimeout(20*time.Minute))

	It("held every invariant, with at least a tenth of its writes failed", func(ctx SpecContext) {
		r := w.check(ctx, "fault run", sinceRV, originals, seq0)
		report = r
		c := delta(proxy.Counts(), before)
		rotations := len(invariants.Anchored(w.rec, []string{w.pool}, sinceRV))
		Expect(r.Violations).To(BeEmpty())
		Expect(rotations).To(BeNumerically(">=", 4))
		// the watch sees every write: rotations side by side, not merely allowed
		most := invariants.MostAtOnce(w.rec, w.pool, fixtures.ControllerNamespace, sinceRV)
		GinkgoWriter.Printf("fault run %s\n", most)
		Expect(most.Anchored).To(BeNumerically(">=", 2), "rotations side by side under faults")
		Expect(float64(c.Faults())).To(BeNumerically(">=", 0.10*float64(c.Targeted)), "at least 10%% of the targeted writes faulted: %s", c)
		Expect(c.Fail500).To(BeNumerically(">", 0))
		Expect(c.Throttle429).To(BeNumerically(">", 0))
		Expect(c.ApplyThen500).To(BeNumerically(">", 0))
		Expect(c.DelayedGets).To(BeNumerically(">", 0))
	}, NodeTimeout(5*time.Minute))
})

// delta is what the proxy counted between two readings.
func delta(now, before apiproxy.Counts) apiproxy.Counts {
	return apiproxy.Counts{
		Mutating: now.Mutating - before.Mutating, Targeted: now.Targeted - before.Targeted, Gets: now.Gets - before.Gets,
		Fail500: now.Fail500 - before.Fail500, Throttle429: now.Throttle429 - before.Throttle429,
		ApplyThen500: now.ApplyThen500 - before.ApplyThen500, DelayedGets: now.DelayedGets - before.DelayedGets,
	}
}
