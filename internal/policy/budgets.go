package policy

import (
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/internal/budget"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// The stretch around now over which the forecast reads the budgets:
// Calendar.Measure's three weeks ahead, and the nine days either side
// by which an occurrence it returns whole may reach past its scan.
const (
	budgetsBefore = 9 * 24 * time.Hour
	budgetsAfter  = 30 * 24 * time.Hour
)

// Coverage is layer 2's verdict on a pool of pop whose NodePool is np, as
// of now, in = s.Inputs of its template and whole the calendar's cycle
// measured at now: the coverage that status, plan
// and the Feasible condition give. When the policy honours the NodePool's
// budgets, they are read over time as the start gate will meet them
// (docs/design.md#budget-forecast): the stretches whose allowance is 0 are
// cut out of the window occurrences, and the strictest allowance left in
// them bounds the number of rotations at once. Karpenter's own
// disruptions, which share the budget, cannot be forecast and are not
// counted.
func (s Settings) Coverage(in schedule.Inputs, whole schedule.Cycle, np *karpv1.NodePool, pop schedule.Population, now time.Time) schedule.Coverage {
	base := s.coverage(in, whole, pop)
	b := s.Budgeted(np, pop.Nodes, now)
	if !b.Read || !base.Applies {
		// no budget to read, or no throughput to cover whatever they say
		return base
	}
	cy := whole
	if len(b.closed) > 0 {
		cy = b.Calendar.Measure(now)
	}
	closedBy := schedule.ClosedBy(b.spans, occurrences(whole, now))
	if !cy.HasOccurrence {
		return schedule.Coverage{Applies: true, Reason: schedule.BudgetClosesEveryOccurrence, Nodes: pop.Nodes, Burst: pop.Burst, ClosedBy: closedBy}
	}
	// The controller makes a claim due at the age threshold it derives
	// from the windows alone: judge the cut windows at that threshold,
	// not at one derived from them.
	controller := schedule.Derive(in, whole)
	a := controller.A
	in.AgeThreshold = &a
	if cut := schedule.Derive(in, cy); controller.G > 0 && cut.G == 0 {
		// between a claim's threshold and its last start the budgets
		// leave no window: the claims due while they hold expire
		return schedule.Coverage{Applies: true, Reason: schedule.BudgetOutlastsLead, Nodes: pop.Nodes, Burst: pop.Burst, ClosedBy: closedBy,
			Lead: max(*in.ExpireAfter-a-cut.TRot, 0), Period: cy.P}
	}
	in.Budget = schedule.LimitOver(b.spans, occurrences(cy, now))
	c := s.coverage(in, cy, pop)
	c.ClosedBy = closedBy
	return c
}

// Budgets is the policy's windows as the NodePool's budgets leave them to
// the rotations, over the forecast's horizon around now.
type Budgets struct {
	// Read: the policy honours the budgets and the pool has some (and a
	// node: a percentage of none reads as 0).
	Read bool
	// Calendar is the policy's, less the stretches the budgets allow no
	// disruption in.
	Calendar schedule.Calendar
	spans    []schedule.BudgetSpan
	closed   []schedule.Interval
}

// Limit is the strictest allowance above 0 over the occurrences of the
// budgeted calendar's cycle measured at now; nil when none bounds them.
func (b Budgets) Limit(now time.Time) *schedule.BudgetLimit {
	if !b.Read {
		return nil
	}
	return schedule.LimitOver(b.spans, occurrences(b.Calendar.Measure(now), now))
}

// Budgeted reads the pool's budgets over the forecast's horizon for a
// pool of nodes nodes (docs/design.md#budget-forecast).
func (s Settings) Budgeted(np *karpv1.NodePool, nodes int, now time.Time) Budgets {
	b := Budgets{Calendar: s.Calendar}
	if !s.HonorBudgets || np == nil || len(np.Spec.Disruption.Budgets) == 0 || nodes == 0 {
		// a pool of no nodes has no throughput to cover (and no budget
		// room: a percentage of none)
		return b
	}
	b.Read = true
	for _, sp := range budget.Timeline(np, nodes, now.Add(-budgetsBefore), now.Add(budgetsAfter)) {
		if sp.Allowed < budget.Unbounded {
			b.spans = append(b.spans, schedule.BudgetSpan{Start: sp.Start, End: sp.End, Allowed: sp.Allowed, Budget: sp.Budget})
		}
	}
	if b.closed = schedule.Closed(b.spans); len(b.closed) > 0 {
		b.Calendar = s.Calendar.Without(b.closed)
	}
	return b
}

func (s Settings) coverage(in schedule.Inputs, cy schedule.Cycle, pop schedule.Population) schedule.Coverage {
	in, d, f := s.Sized(in, cy, pop)
	return schedule.CoverageOf(in, d, pop, f.Needed)
}

// occurrences are the cycle's measured occurrences; of a union open
// around the clock, the coming week.
func occurrences(cy schedule.Cycle, now time.Time) []schedule.Interval {
	if cy.AlwaysOpen {
		return []schedule.Interval{{Start: now, End: now.Add(7 * 24 * time.Hour)}}
	}
	return cy.Occurrences
}
