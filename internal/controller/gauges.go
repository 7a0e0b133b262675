package controller

import (
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/budget"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// gauges is what the pool's gauges show of this pass: the governance and
// census the observation computed for the table, and the drainStuck fact
// exactly as the rotation machine decided it (docs/observability.md).
func gauges(obs *observe.Observation, decisions []engine.Decision) metrics.Pool {
	c := obs.Census.Census
	p := metrics.Pool{
		Name: obs.Pool.Name, Governance: obs.Snapshot.Pool.Governance,
		Candidates: c.Candidates, InBackoff: c.InBackoff, ShortLead: c.ShortLead, MaxRetry: c.MaxRetry,
		InFlight: len(v1alpha1.Anchors(obs.Pool.Annotations)), MaxUnavailable: obs.InForce.N, WindowOpen: obs.WindowOpen,
		Derivation: obs.Derivation, DrainStuck: drainStuck(decisions), DrainBlocked: drainBlocked(obs),
		Disrupted: len(obs.Disruption.Disrupted), BudgetAllowed: -1, Gate: startGate(decisions),
	}
	if obs.Budget.Allowed != budget.Unbounded && obs.Governed() {
		p.BudgetAllowed = obs.Budget.Allowed
	}
	if t, err := time.Parse(time.RFC3339, obs.Pool.Annotations[v1alpha1.AnnotationFreeze]); err == nil && t.After(obs.Now) {
		p.FreezeUntil = t
	}
	return p
}

// The table names the gauges read (checked against the table at startup).
var (
	rotationMachine = engine.UsesMachine("rotation")
	drainingState   = engine.UsesState("rotation", "draining")
	drainStuckFact  = engine.UsesFact("drainStuck")
	idleState       = engine.UsesState("rotation", "idle")
	startGateFact   = engine.UsesFact("startGate")
)

// startGate is the startGate fact as the pass's idle rotation decision
// consulted it; empty when no decision did.
func startGate(decisions []engine.Decision) string {
	for _, d := range decisions {
		if d.Machine != rotationMachine || d.From != idleState {
			continue
		}
		for _, f := range d.Facts {
			if g, ok := f.Value.(string); ok && f.Name == startGateFact {
				return g
			}
		}
	}
	return ""
}

// drainStuck is the rotation machine's drainStuck fact when it decided a
// draining rotation; false otherwise (including when nothing was decided).
func drainStuck(decisions []engine.Decision) bool {
	for _, d := range decisions {
		if d.Machine != rotationMachine || d.From != drainingState {
			continue
		}
		for _, f := range d.Facts {
			if f.Name == drainStuckFact {
				return f.Value == true
			}
		}
	}
	return false
}

// drainBlocked counts the claims the census passed over, by reason; nil
// when it did not look (a pool in flight), so the gauge keeps the count of
// the pool's last idle pass rather than dropping to zero for the flight.
func drainBlocked(obs *observe.Observation) map[string]int {
	if !obs.Governed() {
		return map[string]int{} // no census of candidates: nothing passed over
	}
	if obs.CensusInput.DrainBlockers == nil {
		return nil
	}
	return obs.Census.BlockedByReason()
}
