package inspect

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// ExpiryHorizon is how far `rotationctl plan` on the live cluster looks for
// forced expiries.
const ExpiryHorizon = 28 * 24 * time.Hour

// PoolCoverage is one governed NodePool as `rotationctl plan` with no -f
// sees it: the coverage verdict with the real claims, and the claims the
// schedule alone would leave to Karpenter's expiry in the weeks ahead
// (docs/design.md#coverage-verdict).
type PoolCoverage struct {
	NodePool string `json:"nodePool"`
	Policy   string `json:"policy"`
	// Problem says why a pool a policy selects is not rotated at all: a
	// tie, an invalid policy, a malformed annotation; the rest is then
	// zero.
	Problem string `json:"problem,omitempty"`
	// Fatal lists the pool's fatal findings (no rotation starts), Warnings
	// its other warning findings.
	Fatal    []string          `json:"fatal,omitempty"`
	Warnings []string          `json:"warnings,omitempty"`
	Coverage schedule.Coverage `json:"coverage"`
	// Gate is the pool's start gate now, as status shows it (GateWhy:
	// what holds it, for the gates that say).
	Gate    string `json:"gate,omitempty"`
	GateWhy string `json:"gateWhy,omitempty"`
	// Expiring are the claims forecast force-expired within ExpiryHorizon,
	// in deadline order.
	Expiring []schedule.Due `json:"expiring,omitempty"`
	Now      time.Time      `json:"now"`
}

// Blocked reports a pool that rotates nothing: a problem or a fatal
// finding.
func (p *PoolCoverage) Blocked() bool { return p.Problem != "" || len(p.Fatal) > 0 }

// Covers reports whether the pool has nothing to warn of.
func (p *PoolCoverage) Covers() bool {
	return !p.Blocked() && len(p.Warnings) == 0 && p.Coverage.Covered && len(p.Expiring) == 0
}

// Coverage judges one pool; nil when no policy selects it.
func (in *Inspector) Coverage(ctx context.Context, pool string) (*PoolCoverage, error) {
	obs, _, problem, err := in.look(ctx, pool)
	if err != nil {
		return nil, err
	}
	if obs == nil { // a malformed annotation the observation stopped on
		return &PoolCoverage{NodePool: pool, Problem: problem, Now: in.Clock().UTC()}, nil
	}
	pc := &PoolCoverage{NodePool: pool, Now: obs.Now.UTC()}
	switch {
	case len(obs.Governance.Conflict) > 0:
		pc.Policy, pc.Problem = "-", "conflict: "+strings.Join(obs.Governance.Conflict, ",")+" tie: the pool is not rotated"
	case !obs.Governance.Governed():
		return nil, nil
	case obs.PolicyErr != nil:
		pc.Policy, pc.Problem = obs.Governance.Policy.Name, "invalid policy: "+obs.PolicyErr.Error()
	default:
		pc.Policy, pc.Coverage = obs.Governance.Policy.Name, obs.Coverage
		for _, f := range obs.Findings {
			switch f.Severity {
			case schedule.Fatal:
				pc.Fatal = append(pc.Fatal, f.Reason)
			case schedule.Warning:
				pc.Warnings = append(pc.Warnings, f.Reason)
			}
		}
		pc.Expiring = expiring(obs)
		var st PoolStatus
		st.describeGate(in.Engine, obs)
		pc.Gate, pc.GateWhy = st.Gate, st.GateWhy
		if problem != "" {
			pc.Problem = problem
		}
	}
	return pc, nil
}

// expiring plays the pool's real claims forward (schedule.ExpiriesAhead):
// each claim not rotating yet, from its trigger (or its skip-until) to its
// deadline; a rotation in flight holds its slot for its estimate.
func expiring(obs *observe.Observation) []schedule.Due {
	d := obs.Derivation
	if d.NoDeadline || !d.Cycle.HasOccurrence || schedule.HasFatal(obs.Findings) {
		return nil
	}
	var dues []schedule.Due
	for name, f := range obs.Census.Figures {
		switch {
		case f.Deadline.IsZero(), f.Class == census.ClassInFlight, f.Class == census.ClassDeleting, f.Class == census.ClassExpired:
			continue
		}
		trigger := f.Trigger
		if f.SkipUntil.After(trigger) {
			trigger = f.SkipUntil
		}
		dues = append(dues, schedule.Due{Name: name, Trigger: trigger, Deadline: f.Deadline})
	}
	sort.Slice(dues, func(i, j int) bool { return dues[i].Name < dues[j].Name }) // ties in deadline order by name
	n := max(obs.InForce.N, 1)
	// the windows and the number at once as the budgets leave them
	// (docs/design.md#budget-forecast)
	b := obs.Settings.Budgeted(obs.Pool, obs.Census.Population.Nodes, obs.Now)
	if l := b.Limit(obs.Now); l != nil && n > max(l.Allowed, 1) {
		n = max(l.Allowed, 1)
	}
	free := make([]time.Time, n)
	for i := range free {
		free[i] = obs.Now
		if i < len(obs.Slots) && obs.Slots[i].Anchor() != "" {
			free[i] = obs.Now.Add(d.TRotEst)
		}
	}
	timing := obs.Settings.Timing
	timing.MaxUnavailable = n
	return b.Calendar.ExpiriesAhead(free, dues, timing, d.TRotEst, obs.Now.Add(ExpiryHorizon))
}

// RenderCoverage writes the pools' verdicts: a row each, then what each
// pool that is not covered lacks and the claims it would lose.
func RenderCoverage(w io.Writer, pools []*PoolCoverage, format string) error {
	if err := CheckFormat(format); err != nil {
		return err
	}
	if ok, err := encode(w, pools, format); ok {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NODEPOOL\tPOLICY\tNODES\tNEEDED/OCCURRENCE\tFIT (C)\tMAX-UNAVAILABLE\tGATE\tVERDICT\tFORCE-EXPIRIES (4W)")
	var notes []string
	for _, p := range pools {
		c := p.Coverage
		verdict := "covered"
		switch {
		case p.Problem != "":
			verdict = "not rotated"
			notes = append(notes, p.NodePool+": "+p.Problem)
		case len(p.Fatal) > 0:
			verdict = "infeasible: " + strings.Join(p.Fatal, ",")
		case !c.Covered:
			verdict = c.Reason
		case len(p.Warnings) > 0:
			verdict = "covered; warnings: " + strings.Join(p.Warnings, ",")
		}
		needed := "-"
		if c.Applies {
			needed = schedule.PerOccurrence(c.Arrival)
		}
		gate := p.Gate
		if gate == "" {
			gate = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\t%s\t%s\t%d\n", p.NodePool, p.Policy, c.Nodes, needed, c.Capacity, c.InForce, gate, verdict, len(p.Expiring))
		if p.Gate == gateBudget && p.GateWhy != "" {
			notes = append(notes, p.NodePool+": start gate disruptionBudget: "+p.GateWhy)
		}
		if !c.Covered && !p.Blocked() {
			notes = append(notes, p.NodePool+": "+c.Sentence())
		}
		if len(p.Expiring) > 0 {
			notes = append(notes, p.NodePool+": forecast force-expired by Karpenter within 4 weeks: "+dueList(p.Expiring))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	return nil
}

// dueList names up to ten claims with their deadlines, then a count.
func dueList(ds []schedule.Due) string {
	var parts []string
	for i, d := range ds {
		if i == 10 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ds)-10))
			break
		}
		parts = append(parts, d.Name+" ("+d.Deadline.UTC().Format(time.RFC3339)+")")
	}
	return strings.Join(parts, ", ")
}
