package schedule

import (
	"fmt"
	"math"
	"strconv"
)

// Amount is a count, or a percentage of a pool's current nodes: the
// shape of spec.surge.maxUnavailable and maxUnavailableCap
// (docs/design.md#throughput).
type Amount struct {
	Count   int // read when Percent is 0
	Percent int // 1 to 100
}

// Of is the amount for a pool of nodes: a percentage rounded up, and
// never below 1 (a pool of no nodes still has room for one rotation).
func (a Amount) Of(nodes int) int {
	if a.Percent == 0 {
		return max(a.Count, 1)
	}
	return max((a.Percent*nodes+99)/100, 1)
}

func (a Amount) String() string {
	if a.Percent == 0 {
		return strconv.Itoa(max(a.Count, 1))
	}
	return strconv.Itoa(a.Percent) + "%"
}

// Concurrency is how many rotations of one pool may be in flight at once:
// an Amount, or Auto — the smallest number that covers the pool, bounded
// by Cap.
type Concurrency struct {
	Auto bool
	Amount
	Cap Amount
}

func (c Concurrency) String() string {
	if c.Auto {
		return "auto"
	}
	return c.Amount.String()
}

// InForce is the number of rotations a pool may have in flight, as a pass
// resolves it, and why.
type InForce struct {
	N int `json:"n"`
	// Needed is the smallest number whose starts per occurrence leave no
	// layer-2 throughput finding for the pool (C·A ≥ nodes·P and
	// K·C ≥ burst); 0 when layer 2 does not apply (no deadline, no
	// occurrence, A ≤ 0, or no nodes).
	Needed int    `json:"needed"`
	Why    string `json:"why"`
	// Budget is the NodePool budget that holds N below the number the
	// policy resolves to (in.Budget); empty when none does.
	Budget string `json:"budget,omitempty"`
}

// Resolve is the number in force for a pool of pop under in (whose own
// MaxUnavailable it ignores) over the cycle cy, held to in.Budget: no
// more rotations at once than the NodePool's budgets allow in the windows.
func (c Concurrency) Resolve(in Inputs, cy Cycle, pop Population) InForce {
	f := c.resolve(in, cy, pop)
	if b := in.Budget; b != nil && f.N > max(b.Allowed, 1) {
		f.N, f.Budget = max(b.Allowed, 1), b.Budget
		f.Why += fmt.Sprintf("; held at %d by NodePool budget %s", f.N, b.Budget)
	}
	return f
}

func (c Concurrency) resolve(in Inputs, cy Cycle, pop Population) InForce {
	in.MaxUnavailable = 1
	needed := Needed(in, Derive(in, cy), pop)
	switch {
	case !c.Auto && c.Percent == 0:
		return InForce{N: c.Of(pop.Nodes), Needed: needed, Why: fmt.Sprintf("maxUnavailable %d", c.Of(pop.Nodes))}
	case !c.Auto:
		return InForce{N: c.Of(pop.Nodes), Needed: needed, Why: fmt.Sprintf("maxUnavailable %s of %d nodes, rounded up", c.Amount, pop.Nodes)}
	}
	limit := c.Cap.Of(pop.Nodes)
	capWhy := fmt.Sprintf("maxUnavailableCap %s", c.Cap)
	if c.Cap.Percent != 0 {
		capWhy += fmt.Sprintf(" of %d nodes", pop.Nodes)
	}
	switch {
	case needed == 0:
		return InForce{N: 1, Why: "auto: 1, the pool has no throughput to cover (no deadline, no occurrence, no age threshold or no nodes)"}
	case needed > limit:
		return InForce{N: limit, Needed: needed, Why: fmt.Sprintf("auto: %d, held at %s; %d would cover the pool", limit, capWhy, needed)}
	}
	return InForce{N: needed, Needed: needed, Why: fmt.Sprintf("auto: %d, the smallest that covers %d nodes (%s)", needed, pop.Nodes, capWhy+" allows "+strconv.Itoa(limit))}
}

// Needed is the smallest n for which n·C₁ (d is the derivation at one
// rotation at a time) leaves neither ThroughputBelowArrival nor
// ThroughputBurstShortfall — the very comparisons layer 2 makes — or 0
// when layer 2 does not apply.
func Needed(in Inputs, d Derivation, pop Population) int {
	if d.NoDeadline || !d.Cycle.HasOccurrence || d.A <= 0 || d.C <= 0 || in.MinRotationChances < 1 || (pop.Nodes == 0 && pop.Burst == 0) {
		return 0
	}
	covers := func(n int) bool {
		c := n * d.C
		return float64(c)*float64(d.A) >= float64(pop.Nodes)*float64(d.Cycle.P) && in.MinRotationChances*c >= pop.Burst
	}
	// the closed forms first, then the exact comparisons settle rounding
	n := max(1,
		int(math.Ceil(float64(pop.Nodes)*float64(d.Cycle.P)/(float64(d.A)*float64(d.C)))),
		int(math.Ceil(float64(pop.Burst)/float64(in.MinRotationChances*d.C))))
	for !covers(n) {
		n++
	}
	for n > 1 && covers(n-1) {
		n--
	}
	return n
}
