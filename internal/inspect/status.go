package inspect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/budget"
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
	// failurePause) or open, as the table's startGate fact says; GateUntil
	// is when every gate is open again: the first open window after the
	// freeze, the cooldown and the failure pause have all run out.
	Gate      string    `json:"gate,omitempty"`
	GateUntil time.Time `json:"gateUntil,omitzero"`
	// GateWhy says what holds a windowEnding pool: the time left in the
	// occurrence against the forecast (docs/design.md#window-end).
	GateWhy string `json:"gateWhy,omitempty"`
	// WindowLeft is the short form for the GATE column: "9m left,
	// forecast 14m".
	WindowLeft string `json:"-"`
	// MaxUnavailable is the number of rotations the pool may have in
	// flight at once (docs/design.md#throughput); Rotations are those in
	// flight, in slot order, and InFlight the first of them.
	MaxUnavailable int `json:"maxUnavailable,omitempty"`
	// FreeSlot is the slot the next start takes, 0 when every slot below
	// MaxUnavailable is in flight.
	FreeSlot  int           `json:"freeSlot,omitempty"`
	Rotations []*InFlight   `json:"rotations,omitempty"`
	InFlight  *InFlight     `json:"inFlight,omitempty"`
	Census    census.Census `json:"census"`
	Next      *Next         `json:"next,omitempty"`
	// Forecast places the outstanding rotations (candidates and claims in
	// backoff) on the calendar at t_rot_est each; none when Blocked says
	// why the pool starts no rotation at all (infeasible, static pool).
	Forecast *schedule.Forecast `json:"forecast,omitempty"`
	Blocked  string             `json:"blocked,omitempty"`
	// Transitions are what each machine's pass does now.
	Transitions map[string]string `json:"transitions,omitempty"`
	// ExpiredUnrotated counts the pool's claims Karpenter expired with no
	// rotation of them in flight in the last seven days, as the pool's
	// expired-unrotated records them (docs/design.md#coverage).
	ExpiredUnrotated int `json:"expiredUnrotated7d"`
	// Coverage is layer 2's verdict on a governed pool: whether its nodes
	// can all be rotated before their deadlines at the number in force
	// (docs/design.md#coverage-verdict).
	Coverage *schedule.Coverage `json:"coverage,omitempty"`
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
	// Next is the next occurrence to open: after the current one when
	// open, the one NextOpen starts when closed; nil around the clock.
	Next *Occurrence `json:"next,omitempty"`
}

// Occurrence is one occurrence of a window, in UTC, with the zone of the
// entry that opened it.
type Occurrence struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Zone  string    `json:"zone,omitempty"`
}

// String is the occurrence in its own zone: "Wed 2026-12-02 02:00 – 06:00 JST (Asia/Tokyo)".
func (o *Occurrence) String() string {
	loc, err := time.LoadLocation(o.Zone)
	if err != nil {
		loc = time.UTC
	}
	return schedule.FormatOccurrence(o.Start, o.End, loc)
}

// occurrenceAt is the occurrence containing t; nil when none does or the
// window is open around the clock (no occurrence to name).
func occurrenceAt(cal schedule.Calendar, t time.Time) *Occurrence {
	if t.IsZero() || cal.AlwaysOpen(t) {
		return nil
	}
	o, ok := cal.OccurrenceAt(t)
	if !ok {
		return nil
	}
	return &Occurrence{Start: o.Start.UTC(), End: o.End.UTC(), Zone: zone(o.Location)}
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
	st := &PoolStatus{NodePool: pool, Problem: problem, Now: in.Clock().UTC()}
	if obs == nil {
		return st
	}
	st.Now = obs.Now.UTC()
	st.describeGovernance(obs)
	st.Census = obs.Census.Census
	st.ExpiredUnrotated = expiredUnrotated(obs)
	if obs.Governed() {
		c := obs.Coverage
		st.Coverage = &c
	}
	if len(ds) > 0 {
		st.Transitions = map[string]string{}
		for _, d := range ds {
			st.Transitions[d.Machine] = cmp.Or(d.Transition, "(undecided)")
		}
	}
	st.MaxUnavailable = obs.InForce.N
	if f := obs.FreeSlot(); f != nil {
		st.FreeSlot = int(f.Slot)
	}
	for _, s := range obs.Slots {
		if s.Anchor() == "" {
			continue
		}
		d, err := in.Engine.DecideMachine(&s.Snapshot, rotationMachine)
		f := inFlight(s, &d)
		if err != nil {
			f = inFlight(s, nil)
		}
		if obs.Governed() { // no policy's durations: no bound (a held drain has none)
			f.bound(in.Engine, s)
		}
		st.Rotations = append(st.Rotations, f)
	}
	if len(st.Rotations) > 0 {
		st.InFlight = st.Rotations[0]
	}
	if !obs.Governed() {
		return st
	}
	st.Window = window(obs)
	st.describeGate(in.Engine, obs)
	st.tRotEst = obs.Derivation.TRotEst
	queue := waiting(obs)
	if anchoredCandidate(obs) { // anchored before its state is written
		st.Census.Candidates--
		st.Census.InFlight++
	}
	if st.Blocked = blocked(obs, st, decision(ds, rotationMachine)); st.Blocked == "" {
		st.Forecast = forecast(in.Engine, obs, st, len(queue)+st.Census.InBackoff)
	}
	if len(queue) > 0 {
		c := queue[0]
		st.Next = &Next{NodeClaim: c.Claim.Name, Kind: census.Kind(obs.CensusInput, c), Deadline: c.Deadline.UTC()}
		st.Next.ExpiresFirst = st.expiresFirst(st.Forecast.Start(0), c.Deadline)
	}
	return st
}

// anchoredCandidate: the claim the anchor names is one the census counts
// as a candidate — the pass that wrote the anchor has not yet written its
// state.
func anchoredCandidate(obs *observe.Observation) bool {
	f, ok := obs.Census.Figures[obs.Pool.Annotations[v1alpha1.AnnotationActiveRotation]]
	return ok && census.Class(obs.CensusInput, f) == census.ClassCandidate
}

// waiting is the census's eligible claims in its order (short lead first,
// then the earliest deadline): the queue the next starts take. A claim
// the anchor already names is in flight even before its state is written
// (the pass that writes the anchor writes the state next), so it is not
// waiting.
func waiting(obs *observe.Observation) []census.Figures {
	anchor := obs.Pool.Annotations[v1alpha1.AnnotationActiveRotation]
	var q []census.Figures
	for _, f := range obs.Census.Figures {
		if _, passedOver := obs.Census.Blocked[f.Claim.Name]; passedOver {
			continue // deferred for its drain blockers until urgent
		}
		if f.Claim.Name != anchor && census.Class(obs.CensusInput, f) == census.ClassCandidate {
			q = append(q, f)
		}
	}
	sort.Slice(q, func(i, j int) bool { return census.Ahead(q[i], q[j]) })
	return q
}

// blocked says why the pool starts no rotation whatever the gates do, ""
// when it may start one; in the table's order (static before infeasible).
// Only the rotation machine's own undecidability, or a gate that cannot
// be evaluated, blocks starts: the window machine's does not.
func blocked(obs *observe.Observation, st *PoolStatus, rotation *engine.Decision) string {
	switch {
	case rotation != nil && rotation.Undecided != nil, st.Gate == "" && st.Problem != "":
		return "undecidable"
	case obs.Snapshot.Pool.Static:
		return "static pool"
	case !obs.Snapshot.Pool.Feasible:
		return "infeasible"
	}
	return ""
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

// The table names the status reads (checked against the table when it
// loads: table.Load).
var (
	rotationMachine  = engine.UsesMachine("rotation")
	windowMachine    = engine.UsesMachine("window")
	goneState        = engine.UsesState("rotation", "gone")
	startGateFact    = engine.UsesFact("startGate")
	gateOpen         = engine.UsesFactValue("startGate", "open")
	gateClusterCap   = engine.UsesFactValue("startGate", "clusterCap")
	gateBudget       = engine.UsesFactValue("startGate", "disruptionBudget")
	gateWindowEnding = engine.UsesFactValue("startGate", "windowEnding")
	readyTimeoutFact = engine.UsesFact("readyTimeoutElapsed")
	drainStuckFact   = engine.UsesFact("drainStuck")
	prePullFact      = engine.UsesFact("prePull")
	prePullRunning   = engine.UsesFactValue("prePull", "running")
	repairStranded   = engine.UsesTransition("idle.repair-stranded")
	governed         = engine.UsesFactValue("governance", "governed")
	ungoverned       = engine.UsesFactValue("governance", "ungoverned")
	conflict         = engine.UsesFactValue("governance", "conflict")
	invalid          = engine.UsesFactValue("governance", "invalid")
	readopt          = engine.UsesTransition("idle.readopt")
)

// describeGate evaluates the table's startGate fact — whether or not this
// pass consults it — and works out when the gate opens.
func (st *PoolStatus) describeGate(eng *engine.Engine, obs *observe.Observation) {
	v, err := eng.Evaluate(&obs.Snapshot, startGateFact)
	if err != nil {
		st.Problem = "undecidable until fixed: " + err.Error()
		return
	}
	st.Gate = v.(string)
	switch st.Gate {
	case gateOpen:
	case gateClusterCap:
		// it opens when another pool's rotation ends: no instant to show
		st.GateWhy = fmt.Sprintf("%d rotations in flight in other pools, the cap is %d", obs.ClusterInFlight, obs.ClusterCap)
	case gateBudget:
		// it opens when the budget's schedule ends or a disruption does
		st.GateWhy = budget.Why(obs.Budget, obs.Disruption.Disrupted, max(obs.InForce.N, 1))
		if obs.Budget.Holds(len(obs.Disruption.Disrupted)) {
			// held by the number in force instead, it opens when a
			// disruption ends: no instant to show
			st.GateUntil = obs.Budget.Until
		}
	default:
		st.GateUntil = gatesOpen(obs)
	}
	if w := obs.WindowEnd; st.Gate == gateWindowEnding {
		st.GateWhy = WindowEndingWhy(w)
		st.WindowLeft = schedule.FormatDuration(w.Left.Round(time.Second)) + " left, forecast " + schedule.FormatDuration(w.Forecast.Round(time.Second))
	}
}

// WindowEndingWhy is the account of a window-end hold the status, explain
// and the log line share.
func WindowEndingWhy(w observe.WindowEnd) string {
	forecast := schedule.FormatDuration(w.Forecast.Round(time.Second))
	if w.Learned {
		forecast += " (learned)"
	}
	return "not starting: " + schedule.FormatDuration(w.Left.Round(time.Second)) + " left in the window, forecast " + forecast
}

// gatesOpen is the first instant at which every start gate is open: the
// latest end of the freeze, the cooldown and the failure pause, moved to
// the next window opening when the window is closed then. Zero when no
// window opens within the calendar's lookahead.
func gatesOpen(obs *observe.Observation) time.Time {
	a := obs.Pool.Annotations
	t := obs.Now
	for _, end := range []time.Time{
		parseTime(a[v1alpha1.AnnotationFreeze]),
		parseTime(a[v1alpha1.AnnotationLastRotationAt]).Add(obs.Settings.CooldownAfter),
		parseTime(a[v1alpha1.AnnotationLastFailureAt]).Add(obs.Derivation.FailurePause),
	} {
		if end.After(t) {
			t = end
		}
	}
	if w := obs.WindowEnd; w.Ending && t.Before(w.Close) {
		t = w.Close // the window-end gate holds until this occurrence is over
	}
	t = obs.Settings.AfterBlackouts(t)
	cal := obs.Settings.Calendar
	if cal.IsOpen(t) {
		return t.UTC()
	}
	next, ok := cal.NextOpen(t)
	if !ok {
		return time.Time{}
	}
	return obs.Settings.AfterBlackouts(next).UTC()
}

func window(obs *observe.Observation) *Window {
	cal := obs.Settings.Calendar
	w := &Window{Open: obs.WindowOpen}
	if o, ok := cal.OccurrenceAt(obs.Now); ok {
		w.Opened, w.Zone = o.Start.UTC(), zone(o.Location)
		if t, ok := cal.NextClose(obs.Now); ok {
			w.Closes = t.UTC()
			if next, ok := cal.NextOpen(t); ok {
				w.Next = occurrenceAt(cal, next)
			}
		} else {
			w.Opened = time.Time{} // open around the clock: no edge to show
		}
		return w
	}
	if t, ok := cal.NextOpen(obs.Now); ok {
		w.NextOpen = t.UTC()
		if o, ok := cal.OccurrenceAt(t); ok {
			w.Zone = zone(o.Location)
		}
		w.Next = occurrenceAt(cal, t)
	}
	return w
}

func zone(l *time.Location) string {
	if l == nil {
		return ""
	}
	return l.String()
}

// forecast plays n rotations forward from when the pool can next start,
// on each of its rotation slots (docs/design.md#throughput): a slot with a
// rotation in flight is free once it ends — at its estimate from its start
// (started-at, or the slot's draining-at for a surge-less one), or now once
// it has overrun it or its claim is gone — and then the cooldown; or, when
// its readyTimeout has run out, the failure pause, and the failed claim is
// one more rotation to place. A free slot is free now, or, when a pass is
// mending an anchor (repairing, re-adopting), once that rotation is
// finished, counted as one just starting. With more in flight than the
// number in force (lowered meanwhile), the slots free up as the latest of
// them end. No slot starts before every gate is open.
func forecast(eng *engine.Engine, obs *observe.Observation, st *PoolStatus, n int) *schedule.Forecast {
	tRotEst := obs.Derivation.TRotEst
	var free []time.Time
	for _, s := range obs.Slots {
		if s.Anchor() == "" {
			continue
		}
		f := st.rotation(s.Anchor())
		end, after := obs.Now.Add(tRotEst), obs.Settings.CooldownAfter
		started := f.StartedAt
		if started.IsZero() {
			started = parseTime(s.Pool.Annotations[s.Slot.Key(v1alpha1.AnnotationDrainingAt)])
		}
		if !started.IsZero() {
			end = started.Add(tRotEst)
		}
		if end.Before(obs.Now) || f.State == goneState { // overrunning, or ending
			end = obs.Now
		}
		if v, err := eng.Evaluate(&s.Snapshot, readyTimeoutFact); err == nil && v == true {
			end, after = obs.Now, obs.Derivation.FailurePause
			n++
		}
		free = append(free, end.Add(after))
	}
	// more in flight than the number in force (it was lowered): no start
	// until fewer are, so the n slots free up at the n latest ends
	n0 := max(obs.InForce.N, 1)
	if len(free) > n0 {
		slices.SortFunc(free, time.Time.Compare)
		free = free[len(free)-n0:]
	}
	idle := obs.Now
	if t := st.Transitions[rotationMachine]; len(free) == 0 && (t == repairStranded || t == readopt) {
		idle = obs.Now.Add(tRotEst + obs.Settings.CooldownAfter)
	}
	for len(free) < n0 {
		free = append(free, idle)
	}
	for i := range free {
		free[i] = later(free[i], st.GateUntil)
	}
	f := obs.Settings.Calendar.ForecastSlots(free, n, obs.Settings.Timing, tRotEst)
	for i := range f.Starts {
		f.Starts[i] = f.Starts[i].UTC()
	}
	f.Done = f.Done.UTC()
	return &f
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// expiredUnrotated counts the losses the pool records from the last
// LossesKept: the record may hold older ones until its next write.
func expiredUnrotated(obs *observe.Observation) int {
	losses, _ := v1alpha1.ParseLosses(obs.Pool.Annotations[v1alpha1.AnnotationExpiredUnrotated])
	n := 0
	for _, l := range losses {
		if obs.Now.Sub(l.DeletedAt) < v1alpha1.LossesKept {
			n++
		}
	}
	return n
}
