package inspect

import (
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// InFlight is the rotation the pool's anchor names.
type InFlight struct {
	NodeClaim string `json:"nodeClaim"`
	// State is the claim's state (pending, draining, …); Phase is the
	// rotation machine's transition for it now.
	State     string    `json:"state"`
	Phase     string    `json:"phase"`
	Mode      string    `json:"mode"` // surge or forcefulFallback
	StartedAt time.Time `json:"startedAt,omitzero"`
	SurgeNode string    `json:"surgeNode,omitempty"`
	// Bound is the instant that ends the phase as the table counts it:
	// readyTimeout for a surge not yet ready (then it is rolled back),
	// prePull.timeout while the pre-pull phase runs (then the drain
	// starts), the drain bound once the old claim's delete is issued (then
	// the drain is stuck); Bounded names it. Zero when the phase has none.
	Bound   time.Time `json:"bound,omitzero"`
	Bounded string    `json:"bounded,omitempty"`
	// PrePull is its pre-pull phase, when the policy turns it on and the
	// phase has begun or is about to.
	PrePull *PrePullView `json:"prePull,omitempty"`
}

// rotation is the rotation in flight whose anchor names claim, nil when
// none does.
func (st *PoolStatus) rotation(claim string) *InFlight {
	for _, f := range st.Rotations {
		if f.NodeClaim == claim {
			return f
		}
	}
	return nil
}

// inFlight describes the rotation a slot's anchor names (obs is the slot's
// observation), nil when the slot is free.
func inFlight(obs *observe.Observation, rot *engine.Decision) *InFlight {
	a, k := obs.Pool.Annotations, obs.Slot.Key
	name := obs.Anchor()
	if name == "" {
		return nil
	}
	f := &InFlight{NodeClaim: name, State: obs.Snapshot.Claim.State, Mode: "surge"}
	if a[k(v1alpha1.AnnotationRotationMode)] != "" {
		f.Mode = "forcefulFallback"
	}
	if !obs.Snapshot.Claim.Exists {
		f.State = goneState
	}
	if rot != nil {
		f.Phase = rot.Transition
	}
	if c := obs.Subject; c != nil {
		f.StartedAt = parseTime(c.Annotations[v1alpha1.AnnotationStartedAt]).UTC()
	}
	f.PrePull = prePullView(obs)
	if obs.SurgeHost != nil {
		f.SurgeNode = obs.SurgeHost.Name
	} else {
		f.SurgeNode = a[k(v1alpha1.AnnotationSurgeNode)]
	}
	return f
}

// bound reads the phase's bound off the table: the instant the fact that
// ends the phase changes (its changesAt), so the figure is the one the
// controller acts on. A claim whose delete is issued is bounded by the
// drain; one pre-pulling by prePull.timeout; one not yet draining by its
// readyTimeout.
func (f *InFlight) bound(eng *engine.Engine, obs *observe.Observation) {
	if f == nil {
		return
	}
	fact, what := readyTimeoutFact, "readyTimeout"
	switch {
	case obs.Snapshot.Claim.Deleting:
		fact, what = drainStuckFact, "drain bound"
	case f.State == v1alpha1.StateDraining && prePulling(eng, obs):
		fact, what = prePullFact, "prePull.timeout"
	case f.State == v1alpha1.StateDraining || f.State == goneState:
		return // draining until its delete is issued, or over
	}
	ts, err := eng.ChangesAt(&obs.Snapshot, fact)
	if err != nil || len(ts) == 0 {
		return
	}
	// changesAt names the first instant past the bound; shown to the second
	f.Bound, f.Bounded = ts[0].Truncate(time.Second).UTC(), what
}

// prePulling: the table reads the rotation's pre-pull phase as running.
func prePulling(eng *engine.Engine, obs *observe.Observation) bool {
	v, err := eng.Evaluate(&obs.Snapshot, prePullFact)
	return err == nil && v == prePullRunning
}
