package observe

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/budget"
)

// disruption counts the pool's disruption and reads its budgets for the
// disruptionBudget gate (docs/design.md#disruption-budget). A pool whose
// policy says nodePoolBudgets: Ignore counts its own rotations alone,
// against no budget: the gate then never holds, as before the budgets
// were read.
func (obs *Observation) disruption() {
	var ours []string
	for _, a := range v1alpha1.Anchors(obs.Pool.Annotations) {
		ours = append(ours, a.Claim)
	}
	obs.Budget = budget.Allowance{Allowed: budget.Unbounded}
	if !obs.Settings.HonorBudgets {
		slices.Sort(ours)
		obs.Disruption = budget.Count{Disrupted: slices.Compact(ours)}
		return
	}
	nodes := make(map[string]*corev1.Node, len(obs.nodes))
	for i := range obs.nodes {
		nodes[obs.nodes[i].Name] = &obs.nodes[i]
	}
	obs.Disruption = budget.CountOf(obs.Claims, nodes, ours)
	obs.Budget = budget.Of(obs.Pool, obs.Disruption.Nodes, obs.Now)
}

// disruptedOthers is how many of the pool's claims are being disrupted
// besides the slot's own rotation: for the free slot, all of them.
func disruptedOthers(obs *Observation) int {
	n := len(obs.Disruption.Disrupted)
	if a := obs.Anchor(); a != "" && slices.Contains(obs.Disruption.Disrupted, a) {
		n--
	}
	return n
}

// budgetReached: the slot may not start a rotation beside the pool's
// other disruptions — as many as the number of rotations in force, or as
// the budget allows. The free slot of a pool none of whose claims
// Karpenter is disrupting always has room for its own (it is free only
// below the number in force), so one rotation at a time with the budgets
// unread decides exactly as before.
func budgetReached(obs *Observation) bool {
	if !obs.Governed() || obs.PolicyErr != nil {
		return false
	}
	others := disruptedOthers(obs)
	return others >= max(obs.InForce.N, 1) || obs.Budget.Holds(others)
}
