package controller

import (
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// decided is one decision of a pass with the observation it was made on:
// a slot's for the rotation machine, the pool's own for the others
// (docs/design.md#throughput).
type decided struct {
	obs *observe.Observation
	engine.Decision
}

// decide decides each machine of the table's slot scope (the rotation
// machine) once per slot, in the observation's slot order (anchored
// slots, then the free one), and every other machine once on the pool's
// own snapshot. With one slot the pool's
// snapshot is that slot's, so a pool rotating one node at a time decides
// exactly as Engine.Decide would.
func (r *NodePoolReconciler) decide(obs *observe.Observation) ([]decided, error) {
	var out []decided
	for _, name := range r.Engine.MachineNames() {
		on := []*observe.Observation{obs}
		if r.Engine.Scope(name) == engine.ScopeSlot {
			on = obs.Slots
		}
		for _, o := range on {
			d, err := r.Engine.DecideMachine(&o.Snapshot, name)
			if err != nil {
				return nil, err
			}
			out = append(out, decided{obs: o, Decision: d})
		}
	}
	return out, nil
}

// engineDecisions are the engine decisions alone, for what reads them all
// (the gauges).
func engineDecisions(ds []decided) []engine.Decision {
	out := make([]engine.Decision, len(ds))
	for i, d := range ds {
		out[i] = d.Decision
	}
	return out
}
