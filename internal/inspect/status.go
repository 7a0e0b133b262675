package inspect

import (
	"context"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// PoolStatus is one NodePool as the controller sees it now.
type PoolStatus struct {
	NodePool string `json:"nodePool"`
	// Governance: governed, ungoverned, conflict or invalid
	// (docs/design.md#governance); Policy names the governing policy, or
	// Conflict the tied ones.
	Governance string   `json:"governance"`
	Policy     string   `json:"policy,omitempty"`
	Conflict   []string `json:"conflict,omitempty"`
	// PolicyReady is the reason of the policy's Ready condition, as its
	// status reconciler last wrote it.
	PolicyReady string `json:"policyReady,omitempty"`
	Feasible    bool   `json:"feasible"`
	// Window, Gate and Forecast are given for a governed pool.
	Window *Window `json:"window,omitempty"`
	// Gate is the first closed start gate (windowClosed, frozen, cooldown,
	// failurePause) or open; GateUntil is when it opens, when known.
	Gate      string        `json:"gate,omitempty"`
	GateUntil time.Time     `json:"gateUntil,omitzero"`
	InFlight  *InFlight     `json:"inFlight,omitempty"`
	Census    census.Census `json:"census"`
	Next      *Next         `json:"next,omitempty"`
	// Forecast places the outstanding rotations (candidates and claims in
	// backoff) on the calendar at t_rot_est each.
	Forecast *schedule.Forecast `json:"forecast,omitempty"`
	// Transitions are what each machine's pass does now.
	Transitions map[string]string `json:"transitions,omitempty"`
	// Problem says why the pool cannot be decided, when it cannot.
	Problem string    `json:"problem,omitempty"`
	Now     time.Time `json:"now"`

	tRotEst time.Duration // the rotation estimate the forecast used
}

// expiresFirst reports whether a rotation forecast to start at start would
// end after deadline: Karpenter's forced expiry comes first.
func (st *PoolStatus) expiresFirst(start, deadline time.Time) bool {
	return !deadline.IsZero() && (start.IsZero() || start.Add(st.tRotEst).After(deadline))
}

// Window is the pool's maintenance window at Now.
type Window struct {
	Open bool `json:"open"`
	// Opened and Closes bound the current occurrence when Open; Closes is
	// zero when the window is open around the clock.
	Opened time.Time `json:"opened,omitzero"`
	Closes time.Time `json:"closes,omitzero"`
	// NextOpen is the start of the next occurrence when closed.
	NextOpen time.Time `json:"nextOpen,omitzero"`
	// Zone is the time zone of the occurrence shown.
	Zone string `json:"zone,omitempty"`
}

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
}

// Next is the candidate the next start takes.
type Next struct {
	NodeClaim string    `json:"nodeClaim"`
	Kind      string    `json:"kind"` // surge or forcefulFallback
	Deadline  time.Time `json:"deadline,omitzero"`
	// ExpiresFirst: at the forecast, its rotation would end after its
	// deadline, so Karpenter would expire it forcefully first.
	ExpiresFirst bool `json:"expiresFirst,omitempty"`
}

// Status describes one pool.
func (in *Inspector) Status(ctx context.Context, pool string) (*PoolStatus, error) {
	obs, ds, problem, err := in.look(ctx, pool)
	if err != nil {
		return nil, err
	}
	return in.status(pool, obs, ds, problem), nil
}

// status describes what one pass observed and decided.
func (in *Inspector) status(pool string, obs *observe.Observation, ds []engine.Decision, problem string) *PoolStatus {
	st := &PoolStatus{NodePool: pool, Problem: problem, Now: in.Clock()}
	if obs == nil {
		return st
	}
	st.Now = obs.Now
	st.describeGovernance(obs)
	st.Census = obs.Census.Census
	if len(ds) > 0 {
		st.Transitions = map[string]string{}
		for _, d := range ds {
			st.Transitions[d.Machine] = d.Transition
		}
	}
	st.InFlight = inFlight(obs, decision(ds, "rotation"))
	if !obs.Governed() {
		return st
	}
	st.Window = window(obs)
	st.describeGate(in.Engine, obs)
	st.Forecast, st.tRotEst = forecast(obs, st), obs.Derivation.TRotEst
	if c := obs.Candidate(); c != nil {
		st.Next = &Next{NodeClaim: c.Claim.Name, Kind: c.Kind, Deadline: c.Deadline}
		st.Next.ExpiresFirst = st.expiresFirst(st.Forecast.Start(0), c.Deadline)
	}
	return st
}

func (st *PoolStatus) describeGovernance(obs *observe.Observation) {
	st.Governance = obs.GovernanceState()
	st.Conflict = obs.Governance.Conflict
	st.Feasible = obs.Snapshot.Pool.Feasible
	if p := obs.Governance.Policy; p != nil {
		st.Policy = p.Name
		if c := apimeta.FindStatusCondition(p.Status.Conditions, "Ready"); c != nil {
			st.PolicyReady = c.Reason
		}
	}
}

// describeGate evaluates the table's startGate fact — whether or not this
// pass consults it — and works out when the gate opens.
func (st *PoolStatus) describeGate(eng *engine.Engine, obs *observe.Observation) {
	v, err := eng.Evaluate(&obs.Snapshot, "startGate")
	if err != nil {
		st.Problem = "undecidable until fixed: " + err.Error()
		return
	}
	st.Gate = v.(string)
	a := obs.Pool.Annotations
	switch st.Gate {
	case "windowClosed":
		if t, ok := obs.Settings.Calendar.NextOpen(obs.Now); ok {
			st.GateUntil = t
		}
	case "frozen":
		st.GateUntil = parseTime(a[v1alpha1.AnnotationFreeze])
	case "cooldown":
		st.GateUntil = parseTime(a[v1alpha1.AnnotationLastRotationAt]).Add(obs.Settings.CooldownAfter)
	case "failurePause":
		st.GateUntil = parseTime(a[v1alpha1.AnnotationLastFailureAt]).Add(obs.Derivation.FailurePause)
	}
}

func window(obs *observe.Observation) *Window {
	cal := obs.Settings.Calendar
	w := &Window{Open: obs.WindowOpen}
	if o, ok := cal.OccurrenceAt(obs.Now); ok {
		w.Opened, w.Zone = o.Start, zone(o.Location)
		if t, ok := cal.NextClose(obs.Now); ok {
			w.Closes = t
		} else {
			w.Opened = time.Time{} // open around the clock: no edge to show
		}
		return w
	}
	if t, ok := cal.NextOpen(obs.Now); ok {
		w.NextOpen = t
		if o, ok := cal.OccurrenceAt(t); ok {
			w.Zone = zone(o.Location)
		}
	}
	return w
}

func zone(l *time.Location) string {
	if l == nil {
		return ""
	}
	return l.String()
}

// inFlight describes the anchored rotation, nil when the pool is idle.
func inFlight(obs *observe.Observation, rot *engine.Decision) *InFlight {
	a := obs.Pool.Annotations
	name := a[v1alpha1.AnnotationActiveRotation]
	if name == "" {
		return nil
	}
	f := &InFlight{NodeClaim: name, State: obs.Snapshot.Claim.State, Mode: "surge"}
	if a[v1alpha1.AnnotationRotationMode] != "" {
		f.Mode = "forcefulFallback"
	}
	if !obs.Snapshot.Claim.Exists {
		f.State = "gone"
	}
	if rot != nil {
		f.Phase = rot.Transition
	}
	if c := obs.Subject; c != nil {
		f.StartedAt = parseTime(c.Annotations[v1alpha1.AnnotationStartedAt])
	}
	if obs.SurgeHost != nil {
		f.SurgeNode = obs.SurgeHost.Name
	} else {
		f.SurgeNode = a[v1alpha1.AnnotationSurgeNode]
	}
	return f
}

// forecast plays the outstanding rotations forward from when the pool can
// next start: after the rotation in flight (at its estimate) and the gate.
func forecast(obs *observe.Observation, st *PoolStatus) *schedule.Forecast {
	from := obs.Now
	if st.Gate != "windowClosed" && st.GateUntil.After(from) { // the calendar handles closed windows
		from = st.GateUntil
	}
	if st.InFlight != nil && !st.InFlight.StartedAt.IsZero() {
		if free := st.InFlight.StartedAt.Add(obs.Derivation.TRotEst + obs.Settings.CooldownAfter); free.After(from) {
			from = free
		}
	}
	f := obs.Settings.Calendar.ForecastRotations(from, obs.Census.Census.Outstanding(), obs.Settings.Timing, obs.Derivation.TRotEst)
	return &f
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}
