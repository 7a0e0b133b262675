package schedule

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Coverage is layer 2's verdict on a pool at the number of rotations in
// force: whether every node can be rotated before its deadline, and if
// not, what would change that (docs/design.md#coverage-verdict).
type Coverage struct {
	// Applies: layer 2 judges the pool (a deadline, an occurrence, A > 0
	// and nodes). A pool it does not judge is covered.
	Applies bool `json:"applies"`
	Covered bool `json:"covered"`
	// Reason is ThroughputBelowArrival (the steady rate) or
	// ThroughputBurstShortfall (deadlines bunched within one P), the first
	// that fails; empty when covered.
	Reason string `json:"reason,omitempty"`
	Nodes  int    `json:"nodes"`
	Burst  int    `json:"burst"`
	// Arrival is N·P/A: the rotations each occurrence must carry.
	Arrival float64 `json:"arrival"`
	// Capacity is C, the starts an occurrence carries at InForce rotations
	// at once.
	Capacity int `json:"capacity"`
	InForce  int `json:"inForce"`
	// Needed is the smallest maxUnavailable that covers the pool.
	Needed int `json:"needed,omitempty"`
	// Window is the shortest occurrence that would cover the pool at
	// InForce; 0 when none can (it would exceed the period) or the union
	// is open around the clock.
	Window time.Duration `json:"window,omitempty"`
	// LargestPool is the most nodes C carries at this rate and burst:
	// pools split to at most this many (their deadlines bunched as this
	// pool's are) are covered; 0 when C is 0.
	LargestPool int `json:"largestPool,omitempty"`
	// HeldBy is the NodePool budget that holds InForce below Needed: the
	// remedy is a budget that allows Needed (docs/design.md#budget-forecast).
	HeldBy string `json:"heldBy,omitempty"`
	// ClosedBy are the NodePool budgets whose zero allowance the forecast
	// cut out of the window occurrences, each once.
	ClosedBy []string `json:"closedBy,omitempty"`
	// Lead and Period, for BudgetOutlastsLead: the span between a claim's
	// age threshold and its last start (expireAfter − A − t_rot), and the
	// largest gap between the starts of the windows the budgets leave.
	Lead   time.Duration `json:"lead,omitempty"`
	Period time.Duration `json:"period,omitempty"`
}

// The Reasons of a pool whose NodePool budgets leave its windows too
// little (docs/design.md#budget-forecast): none of its occurrences, or
// none within the lead of a claim that falls due while they hold.
const (
	BudgetClosesEveryOccurrence = "BudgetClosesEveryOccurrence"
	BudgetOutlastsLead          = "BudgetOutlastsLead"
)

// CoverageOf judges a pool of pop whose derivation at the number in force
// is d (in.MaxUnavailable that number), with needed the smallest number
// that covers it (InForce.Needed).
func CoverageOf(in Inputs, d Derivation, pop Population, needed int) Coverage {
	n := max(in.MaxUnavailable, 1)
	c := Coverage{Covered: true, Nodes: pop.Nodes, Burst: pop.Burst, Capacity: d.C, InForce: n}
	if d.NoDeadline || !d.Cycle.HasOccurrence || d.A <= 0 || pop.Nodes == 0 {
		return c
	}
	c.Applies = true
	c.Arrival = float64(pop.Nodes) * float64(d.Cycle.P) / float64(d.A)
	for _, f := range layer2(in, d, pop) {
		if f.Reason == "ThroughputBelowArrival" || f.Reason == "ThroughputBurstShortfall" {
			c.Covered, c.Reason = false, f.Reason
			break
		}
	}
	if c.Covered {
		return c
	}
	c.Needed = needed
	if b := in.Budget; b != nil && needed > n && n >= b.Allowed {
		c.HeldBy = b.Budget
	}
	if d.C > 0 {
		// the rate's bound, and the burst's if the pool's deadlines bunch
		// the same way in each part
		c.LargestPool = int(float64(d.C) * float64(d.A) / float64(d.Cycle.P))
		if k := in.MinRotationChances; pop.Burst > 0 && k > 0 {
			c.LargestPool = min(c.LargestPool, k*d.C*pop.Nodes/pop.Burst)
		}
	}
	c.Window = window(in, d, pop, n)
	return c
}

// window is the shortest occurrence whose starts, n at a time, carry the
// pool: each slot starts one rotation per t_rot_est + cooldownAfter, and
// the last may start in the occurrence's final minute (Derive's C).
func window(in Inputs, d Derivation, pop Population, n int) time.Duration {
	if d.Cycle.AlwaysOpen {
		return 0
	}
	per := math.Ceil(c1Needed(pop, d, in.MinRotationChances, n))
	service := max(d.TRotEst+in.CooldownAfter, Tick)
	w := time.Duration(per-1)*service + time.Minute + d.StartHold
	if w >= d.Cycle.P {
		return 0
	}
	return w
}

// c1Needed is the starts per occurrence each of n slots must make.
func c1Needed(pop Population, d Derivation, k, n int) float64 {
	rate := float64(pop.Nodes) * float64(d.Cycle.P) / (float64(d.A) * float64(n))
	if k > 0 {
		rate = max(rate, float64(pop.Burst)/float64(k*n))
	}
	return max(rate, 1)
}

// Sentence says the verdict in words, for the Feasible condition, status
// and explain.
func (c Coverage) Sentence() string {
	if !c.Applies {
		return "no throughput to cover (no deadline, no window occurrence, no age threshold or no nodes)"
	}
	switch c.Reason {
	case BudgetClosesEveryOccurrence:
		return fmt.Sprintf("not covered: NodePool budget %s allows no disruption in any window occurrence; a window outside its schedule, a budget that allows rotations in the windows, or nodePoolBudgets: Ignore (where the budget hands node replacement to this controller) would cover it", strings.Join(c.ClosedBy, ", "))
	case BudgetOutlastsLead:
		return fmt.Sprintf("not covered: a claim has %s between its age threshold and its last start, and the windows less NodePool budget %s open only every %s: a claim due while the budget holds expires; policy windows that close while the budget holds (so the age threshold allows for it), or nodePoolBudgets: Ignore, would cover it",
			FormatDuration(c.Lead), strings.Join(c.ClosedBy, ", "), FormatDuration(c.Period))
	}
	at := fmt.Sprintf("maxUnavailable %d", c.InForce)
	if c.HeldBy != "" {
		at += ", held by NodePool budget " + c.HeldBy
	}
	if len(c.ClosedBy) > 0 {
		at += "; the windows less NodePool budget " + strings.Join(c.ClosedBy, ", ")
	}
	rate := fmt.Sprintf("%s need %s rotations per occurrence (N·P/A), and %d fit (C at %s)", nodes(c.Nodes), PerOccurrence(c.Arrival), c.Capacity, at)
	if c.Covered {
		return "covered: " + rate
	}
	if c.Reason == "ThroughputBurstShortfall" {
		rate = fmt.Sprintf("%s have their deadlines within one window period, and minRotationChances × %d fit before them (C at %s)", nodes(c.Burst), c.Capacity, at)
	}
	var fixes []string
	switch {
	case c.Needed > c.InForce && c.HeldBy != "":
		fixes = append(fixes, fmt.Sprintf("a NodePool budget that allows %d", c.Needed))
	case c.Needed > c.InForce:
		fixes = append(fixes, fmt.Sprintf("maxUnavailable %d", c.Needed))
	}
	if c.Window > 0 {
		fixes = append(fixes, "occurrences of at least "+FormatDuration(c.Window))
	}
	if c.LargestPool > 0 && c.LargestPool < c.Nodes {
		fixes = append(fixes, fmt.Sprintf("pools of at most %d nodes", c.LargestPool))
	}
	s := "not covered: " + rate
	if len(fixes) > 0 {
		s += "; " + strings.Join(fixes, ", or ") + " would cover it"
	}
	return s
}

func nodes(n int) string {
	if n == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", n)
}

// PerOccurrence writes a rate of rotations per occurrence to a tenth.
func PerOccurrence(r float64) string {
	if r < 0.1 {
		return "under 0.1"
	}
	return fmt.Sprintf("%.1f", r)
}
