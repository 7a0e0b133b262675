//go:build e2e

package chaos_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/invariants"
)

// The crash campaign with three rotations at once (docs/design.md#throughput):
// a pool of three nodes under maxUnavailable 3 rotates all three side by
// side; the controller is killed right after the first write of each type
// the three make — every slot's pool writes are types of their own — with
// the others wherever they stand. Every invariant must hold, and never
// more than three anchored, placeholders or old claims deleting at once.
var _ = Describe("crash campaign, three at once", Label("crash-slots"), Ordered, func() {
	const pool = "chaos-slots"
	var (
		w         *world
		c         campaign
		sinceRV   int64
		seq0      int
		originals []string
		start     time.Time
		types     []step
		notKilled []string
	)

	BeforeAll(func(ctx SpecContext) {
		start = time.Now()
		// four nodes: a fourth candidate is always there for a controller
		// that would start more than three at once
		w = newWorld(ctx, pool, 4, 3)
		w.ctl = newController()
		sinceRV, seq0 = revision(ctx), proxy.Seq()
		originals = w.claimNames(ctx)
		w.ctl.start()
		DeferCleanup(w.ctl.stop)
	}, NodeTimeout(6*time.Minute))

	AfterEach(func() {
		if CurrentSpecReport().Failed() && w != nil && w.ctl != nil {
			w.diagnose(sinceRV, seq0)
		}
	})

	AfterAll(func() {
		GinkgoWriter.Printf("chaos summary: kills=%d rotations=%d faults=0 violations=%d lost-announcements=%d (crash campaign, three at once: %d iterations in %s)\n",
			c.kills, c.rotations, c.violations, c.lost, c.iterations, time.Since(start).Round(time.Second))
		if len(notKilled) > 0 {
			GinkgoWriter.Printf("steps never reached by their kill: %v\n", notKilled)
		}
	})

	It("learns the writes of three surge rotations at once", func(ctx SpecContext) {
		o := w.iterate(ctx, &c, iteration{label: "recording: three surge rotations", rotate: true})
		types = typeSteps(o.writes)
		GinkgoWriter.Printf("three rotations at once write %d types:\n  %s\n", len(types), strings.Join(stepStrings(types), "\n  "))
		Expect(o.report.Violations).To(BeEmpty())
		Expect(o.anchored).To(HaveLen(3))
		Expect(invariants.MostAtOnce(w.rec, w.pool, fixtures.ControllerNamespace, o.since).Anchored).To(Equal(3), "three anchored at once")
		var names []string
		for _, st := range types {
			names = append(names, st.Type)
		}
		// each slot's anchor, draining mirror and release are its own keys
		for _, slot := range []string{"", "slot2.", "slot3."} {
			Expect(names).To(ContainElement("PATCH nodepools +noderotation.io/"+slot+"active-rotation +noderotation.io/"+slot+"active-rotation-state=pending"),
				"slot %q anchored", slot)
			Expect(names).To(ContainElement(HavePrefix("PATCH nodepools +noderotation.io/"+slot+"active-rotation-state=draining")), "slot %q draining", slot)
			Expect(names).To(ContainElement(MatchRegexp(`^PATCH nodepools .*-noderotation\.io/`+slot+`active-rotation( |$)`)), "slot %q released", slot)
		}
	}, NodeTimeout(8*time.Minute))

	It("holds every invariant after a kill right after the first write of each type", func(ctx SpecContext) {
		w.killEach(ctx, &c, &notKilled, "three at once", types, iteration{rotate: true})
	}, NodeTimeout(30*time.Minute))

	Context("when Karpenter cannot provision the surges", func() {
		var failure []step
		failing := func(ctx context.Context) func() {
			return func() {
				w.starve(ctx)
				w.editPolicy(ctx, func(p *v1alpha1.RotationPolicy) { p.Spec.Surge.ReadyTimeout = "20s" })
			}
		}

		It("learns the writes of three attempts rolled back at once", func(ctx SpecContext) {
			o := w.iterate(ctx, &c, iteration{label: "recording: three rolled-back attempts", setup: failing(ctx)})
			all := typeSteps(o.writes)
			failure = newSteps(all, types)
			GinkgoWriter.Printf("three rolled-back attempts write %d types, %d not in three surge rotations:\n  %s\n", len(all), len(failure), strings.Join(stepStrings(failure), "\n  "))
			Expect(o.report.Violations).To(BeEmpty())
			Expect(o.anchored).To(HaveLen(3))
			Expect(failedClaims(ctx, w)).To(HaveLen(3), "the three attempts failed")
			var names []string
			for _, st := range failure {
				names = append(names, st.Type)
			}
			for _, slot := range []string{"", "slot2.", "slot3."} {
				Expect(names).To(ContainElement("PATCH nodepools -noderotation.io/"+slot+"active-rotation -noderotation.io/"+slot+"active-rotation-state"),
					"slot %q released with the failure", slot)
			}
		}, NodeTimeout(8*time.Minute))

		It("holds every invariant after a kill right after the first write of each type only a rollback makes", func(ctx SpecContext) {
			w.killEach(ctx, &c, &notKilled, "three rolled back", failure, iteration{setup: failing(ctx)})
			w.setLimit(ctx, w.roomy())
			w.editPolicy(ctx, func(p *v1alpha1.RotationPolicy) { p.Spec.Surge.ReadyTimeout = "3m" })
		}, NodeTimeout(20*time.Minute))
	})

	It("holds every invariant after a kill during the startup sweep, with rotations in flight", func(ctx SpecContext) {
		o := w.startupKill(ctx, &c)
		Expect(o.report.Violations).To(BeEmpty())
	}, NodeTimeout(10*time.Minute))

	It("leaves every original claim rotated and every invariant held over the whole campaign", func(ctx SpecContext) {
		r := w.check(ctx, "whole campaign", sinceRV, originals, seq0)
		Expect(r.Violations).To(BeEmpty())
		Expect(c.kills).To(BeNumerically(">=", len(types)))
		GinkgoWriter.Printf("whole campaign %s\n", invariants.MostAtOnce(w.rec, w.pool, fixtures.ControllerNamespace, sinceRV))
	}, NodeTimeout(5*time.Minute))
})
