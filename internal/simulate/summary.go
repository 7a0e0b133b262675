package simulate

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// Figures are plan's schedule figures for a pool (docs/design.md#age-threshold).
type Figures struct {
	P, D, A, TRotEst time.Duration
	// C is counted at N, the rotations at once the policy's
	// maxUnavailable resolves to for the pool at the end of the run.
	C, N       int
	AlwaysOpen bool
}

// PoolSummary is one pool's outcome over the span.
type PoolSummary struct {
	Pool, Policy string
	PolicyError  string
	Nodes        int
	// Plan are the figures plan derives for the pool; nil when no valid
	// policy governs it.
	Plan *Figures
	// Coverage is plan's verdict on the pool, its NodePool budgets read
	// over time (docs/design.md#budget-forecast); nil with Plan.
	Coverage *schedule.Coverage
	// Rotations: claims whose drain the controller began (the rotation's
	// point of no return); Attempts started (retries count again); Started
	// the claims that saw at least one start.
	Rotations, Attempts, Started int
	RotationFailures             int
	ForceExpired                 int
	// Findings are the plan's findings the passes saw on the pool, each
	// reason once: what explains its force-expiries.
	Findings []schedule.Finding
	// MarginMin and MarginMedian: time left before the forced expiry when
	// the rotated claims' deletion began.
	MarginMin, MarginMedian time.Duration
	// YoungestAtStart and OldestAtStart: claims' ages at their first start.
	YoungestAtStart, OldestAtStart time.Duration
	// PerOccurrence counts the starts in each occurrence of the span;
	// MaxPerOccurrence is the most in one occurrence wholly inside it.
	PerOccurrence    []int
	MaxPerOccurrence int
	WindowsMissed    int
	// ExtraSurge: surge claims that never served a rotation — a launch
	// Karpenter gave up on, or a claim a rolled-back attempt reaped.
	ExtraSurge                  int
	LaunchFailures, StuckDrains int
	// LongestHold is the longest a due candidate waited inside an open
	// window with nothing in flight (a start gate held it).
	LongestHold   time.Duration
	LongestHoldAt time.Time
	Passes        int
	PassErrors    int
	LastPassError string
	Events        map[string]int
}

// Totals add the pools up.
type Totals struct {
	Nodes, Rotations, Attempts, RotationFailures, ForceExpired, WindowsMissed, ExtraSurge, Passes, PassErrors int
	MarginMin                                                                                                 time.Duration
	HasMargin                                                                                                 bool
	LongestHold                                                                                               time.Duration
}

func total(pools []*PoolResult) Totals {
	var t Totals
	for _, p := range pools {
		s := p.Summary
		t.Nodes += s.Nodes
		t.Rotations += s.Rotations
		t.Attempts += s.Attempts
		t.RotationFailures += s.RotationFailures
		t.ForceExpired += s.ForceExpired
		t.WindowsMissed += s.WindowsMissed
		t.ExtraSurge += s.ExtraSurge
		t.Passes += s.Passes
		t.PassErrors += s.PassErrors
		t.LongestHold = max(t.LongestHold, s.LongestHold)
		if s.Rotations > 0 && (!t.HasMargin || s.MarginMin < t.MarginMin) {
			t.MarginMin, t.HasMargin = s.MarginMin, true
		}
	}
	return t
}

// RenderSummary writes the text summary: one block per pool, then totals.
func RenderSummary(w io.Writer, r *Result) error {
	fmt.Fprintf(w, "Simulated %s → %s (%s), seed %d, rules version %d\n\n", r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339),
		schedule.Approx(r.End.Sub(r.Start)), r.Seed, r.RulesVersion)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODEPOOL\tPOLICY\tNODES\tROTATED\tSTARTS\tFAILED\tFORCE-EXPIRED\tMARGIN MIN/MEDIAN\tMISSED\tEXTRA SURGE\tLONGEST HOLD")
	for _, p := range r.Pools {
		s := p.Summary
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\n", s.Pool, s.policyCell(), s.Nodes, s.Rotations, s.Attempts,
			s.RotationFailures, s.ForceExpired, s.marginCell(), s.WindowsMissed, s.ExtraSurge, schedule.Approx(s.LongestHold))
	}
	t := r.Total
	margin := "-"
	if t.HasMargin {
		margin = schedule.Approx(t.MarginMin)
	}
	fmt.Fprintf(tw, "TOTAL\t\t%d\t%d\t%d\t%d\t%d\t%s\t%d\t%d\t%s\n", t.Nodes, t.Rotations, t.Attempts, t.RotationFailures, t.ForceExpired,
		margin, t.WindowsMissed, t.ExtraSurge, schedule.Approx(t.LongestHold))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nSchedule figures, plan's against the run's:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODEPOOL\tP\tA\tAGE AT FIRST START\tN\tC\tMOST STARTS IN ONE OCCURRENCE\tSTARTS PER OCCURRENCE")
	for _, p := range r.Pools {
		s := p.Summary
		if s.Plan == nil {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\n", s.Pool)
			continue
		}
		ages := "-"
		if s.Started > 0 {
			ages = schedule.Approx(s.YoungestAtStart) + " – " + schedule.Approx(s.OldestAtStart)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\n", s.Pool, schedule.Approx(s.Plan.P), schedule.Approx(s.Plan.A), ages, s.Plan.N, s.Plan.C, s.MaxPerOccurrence, counts(s.PerOccurrence))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nCoverage, as plan forecasts it (the NodePool budgets read over time):")
	for _, p := range r.Pools {
		if s := p.Summary; s.Coverage != nil {
			fmt.Fprintf(w, "  %s: %s\n", s.Pool, s.Coverage.Sentence())
		}
	}
	for _, p := range r.Pools {
		if s := p.Summary; s.PassErrors > 0 {
			fmt.Fprintf(w, "\n%s: %d passes failed; the last: %s\n", s.Pool, s.PassErrors, s.LastPassError)
		}
	}
	for _, p := range r.Pools {
		forceExpired(w, p)
	}
	return nil
}

// shownExpired bounds the force-expired claims the summary names per pool.
const shownExpired = 20

// forceExpired names a pool's force-expired claims — up to shownExpired,
// then a count — with their forced expiry, and the findings the passes
// saw on the pool, which explain them (docs/policy.md#simulating-a-policy).
func forceExpired(w io.Writer, p *PoolResult) {
	s := p.Summary
	if s.ForceExpired == 0 {
		return
	}
	var names []string
	for _, l := range p.Lanes {
		if l.End == EndExpired {
			names = append(names, l.Name+" (forced expiry "+l.Deadline.UTC().Format(time.RFC3339)+")")
		}
	}
	more := ""
	if len(names) > shownExpired {
		more = fmt.Sprintf(", and %d more", len(names)-shownExpired)
		names = names[:shownExpired]
	}
	fmt.Fprintf(w, "\n%s: %d force-expired by Karpenter: %s%s\n", s.Pool, s.ForceExpired, strings.Join(names, ", "), more)
	if len(s.Findings) == 0 {
		fmt.Fprintln(w, "  the plan found nothing against this policy: see rotationctl simulate --report for each claim's lane")
		return
	}
	for _, f := range s.Findings {
		fmt.Fprintf(w, "  %s %s: %s; %s\n", f.Severity, f.Reason, f.Message, f.Remedy)
	}
}

func (s PoolSummary) policyCell() string {
	switch {
	case s.PolicyError != "":
		return "invalid: " + s.PolicyError
	case s.Policy == "":
		return "<none>"
	}
	return s.Policy
}

func (s PoolSummary) marginCell() string {
	if s.Rotations == 0 {
		return "-"
	}
	return schedule.Approx(s.MarginMin) + " / " + schedule.Approx(s.MarginMedian)
}

func counts(n []int) string {
	if len(n) == 0 {
		return "-"
	}
	const most = 12
	parts := make([]string, 0, most+1)
	for i, v := range n {
		if i == most {
			parts = append(parts, fmt.Sprintf("… (%d occurrences)", len(n)))
			break
		}
		parts = append(parts, fmt.Sprint(v))
	}
	return strings.Join(parts, " ")
}
