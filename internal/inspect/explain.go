package inspect

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// PoolExplanation is a pool's status and what each machine's pass does
// now, with every fact the decision read.
type PoolExplanation struct {
	Status    *PoolStatus       `json:"status"`
	Decisions []engine.Decision `json:"decisions"`
	// Slots are the rotation machine's decision for each slot a pass
	// decides on, when there is more than one (docs/design.md#throughput);
	// Decisions then holds the first.
	Slots []SlotDecision `json:"slots,omitempty"`
}

// SlotDecision is the rotation machine's decision for one slot: an
// anchored one (NodeClaim its anchor), or the free one a start takes.
type SlotDecision struct {
	Slot      int    `json:"slot"`
	NodeClaim string `json:"nodeClaim,omitempty"`
	engine.Decision
}

// ExplainPool describes the pool and the decisions a pass takes now.
func (in *Inspector) ExplainPool(ctx context.Context, pool string) (*PoolExplanation, error) {
	obs, ds, problem, err := in.look(ctx, pool)
	if err != nil {
		return nil, err
	}
	ex := &PoolExplanation{Status: in.status(pool, obs, ds, problem), Decisions: ds}
	if obs != nil && len(obs.Slots) > 1 {
		for _, s := range obs.Slots {
			d, err := in.Engine.DecideMachine(&s.Snapshot, rotationMachine)
			if err != nil {
				return nil, err
			}
			ex.Slots = append(ex.Slots, SlotDecision{Slot: int(s.Slot), NodeClaim: s.Anchor(), Decision: d})
		}
	}
	return ex, nil
}

// ClaimExplanation says why a NodeClaim is or is not rotating now.
type ClaimExplanation struct {
	NodeClaim string `json:"nodeClaim"`
	NodePool  string `json:"nodePool,omitempty"`
	// Class is the claim's census class (census.Class*), or ungoverned,
	// conflict, invalid or malformed when the census does not judge it.
	Class  string `json:"class"`
	Reason string `json:"reason"`
	// Deadline is Karpenter's forced expiry (creation + expireAfter); DueFrom
	// is when the claim passes its age threshold.
	Deadline   time.Time `json:"deadline,omitzero"`
	DueFrom    time.Time `json:"dueFrom,omitzero"`
	RetryAt    time.Time `json:"retryAt,omitzero"`
	RetryCount string    `json:"retryCount,omitempty"`
	// FailureReason is why its last attempt was rolled back: Timeout,
	// Unschedulable or LaunchFailed (docs/design.md#fail-fast).
	FailureReason string `json:"failureReason,omitempty"`
	// RotateNext: an operator asked for it next
	// (docs/design.md#manual-controls).
	RotateNext bool `json:"rotateNext,omitempty"`
	ShortLead  bool `json:"shortLead,omitempty"`
	// Place is the claim's place among the eligible claims (1: the next).
	Place int `json:"place,omitempty"`
	// ExpectedStart is when the forecast starts its rotation, at t_rot_est
	// per rotation ahead of it; zero when it is not waiting its turn.
	ExpectedStart time.Time `json:"expectedStart,omitzero"`
	// EarliestStart, for a claim not yet due or in backoff, is the first
	// instant a window is open once it is eligible: the earliest its
	// rotation can start (claims ahead of it may push it later).
	EarliestStart time.Time `json:"earliestStart,omitzero"`
	// Occurrence is the window occurrence the claim is expected to rotate
	// in: the one of ExpectedStart or EarliestStart (nil when the window
	// is open around the clock).
	Occurrence *Occurrence `json:"occurrence,omitempty"`
	// Blockers are the Pods on its node that would block the drain, and
	// UrgentFrom when its deadline leaves no other choice, for a claim
	// passed over for them (class drainBlocked).
	Blockers   []census.Blocker `json:"blockers,omitempty"`
	UrgentFrom time.Time        `json:"urgentFrom,omitzero"`
	// PhaseBound, for the rotation in flight, is the instant its phase
	// ends by the table (PhaseBounded: readyTimeout, prePull.timeout while
	// it pre-pulls, or the drain bound once its delete is issued).
	PhaseBound   time.Time   `json:"phaseBound,omitzero"`
	PhaseBounded string      `json:"phaseBounded,omitempty"`
	Pool         *PoolStatus `json:"pool,omitempty"`
}

// ExplainClaim explains the named NodeClaim.
func (in *Inspector) ExplainClaim(ctx context.Context, name string) (*ClaimExplanation, error) {
	c := &karpv1.NodeClaim{}
	if err := in.Reader.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("NodeClaim %s not found", name)
		}
		return nil, fmt.Errorf("reading NodeClaim %s: %w", name, err)
	}
	ex := &ClaimExplanation{NodeClaim: name, NodePool: c.Labels[karpv1.NodePoolLabelKey], RetryCount: c.Annotations[v1alpha1.AnnotationRetryCount],
		FailureReason: c.Annotations[v1alpha1.AnnotationFailureReason]}
	if ex.NodePool == "" {
		ex.Class, ex.Reason = ungoverned, "it carries no "+karpv1.NodePoolLabelKey+" label: no NodePool, so no policy, governs it"
		return ex, nil
	}
	obs, ds, problem, err := in.look(ctx, ex.NodePool)
	if err != nil {
		return nil, err
	}
	ex.Pool = in.status(ex.NodePool, obs, ds, problem)
	if obs == nil {
		ex.Class, ex.Reason = "malformed", "its NodePool "+problem
		return ex, nil
	}
	if !obs.Governed() {
		ex.Class, ex.Reason = governanceReason(obs)
		if ex.Pool.rotation(name) != nil {
			ex.Class, ex.Reason = census.ClassInFlight, heldReason(c, ex.Reason)
		}
		return ex, nil
	}
	classify(ex, obs)
	return ex, nil
}

// heldReason: the rotation in flight of a pool no single valid policy
// governs (docs/design.md#governance).
func heldReason(c *karpv1.NodeClaim, why string) string {
	if c.DeletionTimestamp != nil {
		return "it is the pool's rotation in flight, held: its delete is issued (since " + stamp(c.DeletionTimestamp.Time) +
			"), so it cannot be rolled back, and " + why + "; no rotation starts until Karpenter has finished it, and its end is not counted as a success"
	}
	return "it is the pool's rotation in flight, and " + why + ": the next pass rolls it back (GovernanceLost)"
}

func governanceReason(obs *observe.Observation) (string, string) {
	switch g := obs.GovernanceState(); g {
	case conflict:
		return g, "policies " + strings.Join(obs.Governance.Conflict, ", ") + " tie for its NodePool " + obs.Pool.Name + ": no rotation until one is more specific"
	case invalid:
		return g, fmt.Sprintf("its NodePool's policy %s does not resolve: %v", obs.Governance.Policy.Name, obs.PolicyErr)
	}
	return ungoverned, "no RotationPolicy selects its NodePool " + obs.Pool.Name
}

// classify fills the claim's census class, its figures and, when it waits
// its turn, its place and forecast start.
func classify(ex *ClaimExplanation, obs *observe.Observation) {
	for _, b := range obs.Census.Bad {
		if b.Object == "NodeClaim/"+ex.NodeClaim {
			ex.Class, ex.Reason = "malformed", "a malformed annotation keeps it out of the census: "+b.Error()
			return
		}
	}
	f, ok := obs.Census.Figures[ex.NodeClaim]
	if !ok {
		ex.Class, ex.Reason = "malformed", "the census did not judge it"
		return
	}
	ex.Deadline, ex.DueFrom, ex.RetryAt, ex.ShortLead = f.Deadline.UTC(), f.Trigger.UTC(), f.RetryAt.UTC(), f.ShortLead
	ex.RotateNext = f.RotateNext
	ex.Class = census.Class(obs.CensusInput, f)
	rot := ex.Pool.rotation(ex.NodeClaim)
	if ex.Class == census.ClassCandidate && rot != nil {
		ex.Class = census.ClassInFlight // anchored; its state is written next
	}
	if ex.Class == census.ClassInFlight && rot != nil {
		ex.PhaseBound, ex.PhaseBounded = rot.Bound, rot.Bounded
	}
	if b, ok := obs.Census.Blocked[ex.NodeClaim]; ok && ex.Class == census.ClassCandidate {
		ex.Class, ex.Blockers, ex.UrgentFrom = census.ClassDrainBlocked, b.Blockers, b.UrgentFrom.UTC()
	}
	ex.Place, ex.ExpectedStart = place(obs, ex)
	ex.EarliestStart = earliest(obs, ex, f)
	ex.Occurrence = occurrenceAt(obs.Settings.Calendar, ex.ExpectedStart)
	if ex.Occurrence == nil {
		ex.Occurrence = occurrenceAt(obs.Settings.Calendar, ex.EarliestStart)
	}
	ex.Reason = reason(ex, obs, f)
	if !ex.EarliestStart.IsZero() && ex.Pool.expiresFirst(ex.EarliestStart, ex.Deadline) {
		ex.Reason += "; its forced expiry comes before its earliest rotation could end: Karpenter will expire it"
	}
}

// place ranks the claim in the pool's queue and reads its start off the
// pool's forecast.
func place(obs *observe.Observation, ex *ClaimExplanation) (int, time.Time) {
	if ex.Class != census.ClassCandidate {
		return 0, time.Time{}
	}
	for i, f := range waiting(obs) {
		if f.Claim.Name == ex.NodeClaim {
			return i + 1, ex.Pool.Forecast.Start(i)
		}
	}
	return 0, time.Time{}
}

// earliest is the first open instant at or after a waiting claim becomes
// eligible (its age trigger, or its backoff's end).
func earliest(obs *observe.Observation, ex *ClaimExplanation, f census.Figures) time.Time {
	var from time.Time
	switch ex.Class {
	case census.ClassNotDue:
		from = f.Trigger
	case census.ClassInBackoff:
		from = f.RetryAt
	default:
		return time.Time{}
	}
	cal := obs.Settings.Calendar
	if cal.IsOpen(from) {
		return from.UTC()
	}
	t, _ := cal.NextOpen(from)
	return t.UTC()
}

// reason says the class in an operator's words.
func reason(ex *ClaimExplanation, obs *observe.Observation, f census.Figures) string {
	c := f.Claim
	state := c.Annotations[v1alpha1.AnnotationState]
	switch ex.Class {
	case census.ClassDeleting:
		return "it is being deleted (since " + stamp(c.DeletionTimestamp.Time) + "); Karpenter drains and removes it"
	case census.ClassExpired:
		return "Karpenter's expireAfter expired it before a rotation could (state expired)"
	case census.ClassInFlight:
		rot, anchor := ex.Pool.rotation(c.Name), ""
		if ex.Pool.InFlight != nil {
			anchor = ex.Pool.InFlight.NodeClaim
		}
		switch {
		case rot != nil && state == "":
			return "the pool's anchor names it: its rotation has just started (" + rot.Phase + ")" + phaseBound(ex, rot, obs.Now)
		case rot != nil:
			return "it is the pool's rotation in flight (state " + state + ", " + rot.Phase + ")" + phaseBound(ex, rot, obs.Now)
		case anchor == "" || (ex.Pool.FreeSlot != 0 && obs.Snapshot.Claim.Exists):
			return "it carries state " + state + " but the pool lost its anchor: the next pass writes the anchor back for it (AnchorRestored) and the rotation goes on"
		case !obs.Snapshot.Claim.Exists:
			return "it carries state " + state + " but the pool's anchor names " + anchor + ", a claim that is gone: the next pass puts it in the anchor's place (AnchorRestored) and the rotation goes on"
		case c.DeletionTimestamp != nil:
			return "it carries state " + state + " but the pool's anchor names another claim: stranded, and its delete is issued, so it holds the pool until Karpenter has finished it"
		}
		return "it carries state " + state + " but the pool's anchor names another claim: stranded, the repair fails it back to the census (StrandedRepaired)"
	case census.ClassSkipped:
		why := "an operator's " + v1alpha1.AnnotationSkipUntil + " keeps it out until " + stamp(f.SkipUntil)
		if f.SkipsPastLastStart(obs.Now) {
			why += ", past its last usable start " + stamp(f.LastStart) + ": Karpenter's expiry will replace it forcefully"
		}
		return why
	case census.ClassNoDeadline:
		return "its expireAfter is Never: with no deadline it never becomes due by age"
	case census.ClassNotDue:
		return "not due until " + stamp(f.Trigger) + ", when it passes its age threshold"
	case census.ClassNotReady:
		return "due, but its Ready condition is not True: only a Ready claim is rotated"
	case census.ClassOptedOut:
		return "opted out: its Node " + c.Status.NodeName + " carries " + v1alpha1.KarpenterDoNotDisrupt + "=true set by an operator"
	case census.ClassInBackoff:
		why := "its last attempt failed (retry-count " + orDash(ex.RetryCount)
		if ex.FailureReason != "" {
			why += ", " + ex.FailureReason
		}
		return why + "); in retryBackoff until " + stamp(f.RetryAt)
	case census.ClassBadState:
		return v1alpha1.AnnotationState + "=" + state + " is not a known state"
	case census.ClassDrainBlocked:
		why := "Pods on its Node " + c.Status.NodeName + " would block Karpenter's drain (" + blockerList(ex.Blockers) + "): passed over for claims whose drain can proceed"
		if ex.UrgentFrom.IsZero() {
			return why + "; never taken, as the pool's terminationGracePeriod is unset and Karpenter would wait on those Pods for ever: Karpenter's expiry will take it"
		}
		return why + ", until its deadline leaves no other choice at " + stamp(ex.UrgentFrom)
	}
	return candidateReason(ex)
}

// phaseBound says when the in-flight claim's phase ends by the table:
// its readyTimeout, or the drain bound once its delete is issued.
func phaseBound(ex *ClaimExplanation, c *InFlight, now time.Time) string {
	switch {
	case ex.PhaseBound.IsZero() && c.State == v1alpha1.StateDraining:
		return "; its delete is issued next, once no placeholder is left"
	case ex.PhaseBound.IsZero():
		return ""
	case ex.PhaseBounded == "readyTimeout" && ex.PhaseBound.After(now):
		return "; its surge must be ready by " + stamp(ex.PhaseBound) + " (readyTimeout), or it is rolled back"
	case ex.PhaseBounded == "readyTimeout":
		return "; its readyTimeout ran out at " + stamp(ex.PhaseBound) + ": the next pass rolls it back"
	case ex.PhaseBounded == "prePull.timeout" && ex.PhaseBound.After(now):
		return "; its Pods' images are being pulled onto the surge node: the drain starts when the pre-pull Pod ends, at the latest at " + stamp(ex.PhaseBound) + " (prePull.timeout)"
	case ex.PhaseBounded == "prePull.timeout":
		return "; its prePull.timeout ran out at " + stamp(ex.PhaseBound) + ": the next pass starts the drain"
	case ex.PhaseBound.After(now):
		return "; its delete is issued: Karpenter drains it, counted stuck after " + stamp(ex.PhaseBound) + " (terminationGracePeriod + buffer)"
	}
	return "; its delete is issued and its drain is stuck since " + stamp(ex.PhaseBound) + " (terminationGracePeriod + buffer): the gate stays held until Karpenter finishes"
}

func candidateReason(ex *ClaimExplanation) string {
	st := ex.Pool
	var b strings.Builder
	switch {
	case ex.RotateNext && ex.Place == 1:
		b.WriteString("the next candidate: an operator's " + v1alpha1.AnnotationRotateNext + " asks for it")
	case ex.Place == 1:
		b.WriteString("the next candidate (short-lead claims first, then the earliest deadline)")
	default:
		fmt.Fprintf(&b, "a candidate, %d in line (short-lead claims first, then the earliest deadline)", ex.Place)
	}
	switch {
	case st.InFlight != nil && st.FreeSlot == 0 && len(st.Rotations) > 1:
		fmt.Fprintf(&b, "; waits for a free slot: all %d rotations the pool may run at once are in flight", len(st.Rotations))
	case st.InFlight != nil && st.FreeSlot == 0:
		b.WriteString("; waits for the rotation of " + st.InFlight.NodeClaim + " in flight")
	case st.Blocked != "":
		b.WriteString("; but the pool starts no rotation: " + st.Blocked)
	case st.Gate != "" && st.Gate != gateOpen:
		b.WriteString("; the " + st.Gate + " gate holds the pool")
		if st.GateWhy != "" {
			b.WriteString(" (" + st.GateWhy + ")")
		}
		if !st.GateUntil.IsZero() {
			b.WriteString(", every gate open at " + stamp(st.GateUntil))
		}
	case st.FreeSlot != 0 && len(st.Rotations) > 0:
		fmt.Fprintf(&b, "; %d of %d rotations in flight, slot %d is free", len(st.Rotations), st.MaxUnavailable, st.FreeSlot)
		if ex.Place == 1 {
			b.WriteString(": the next start takes it")
		}
	case ex.Place == 1 && st.Transitions[rotationMachine] != "":
		b.WriteString("; the pool's pass takes " + st.Transitions[rotationMachine])
	}
	if !ex.ExpectedStart.IsZero() {
		b.WriteString("; forecast start " + stamp(ex.ExpectedStart))
	}
	if st.expiresFirst(ex.ExpectedStart, ex.Deadline) {
		b.WriteString("; its forced expiry comes before the forecast rotation ends: Karpenter will expire it unless it is rotated sooner")
	}
	return b.String()
}

// stamp is how explanations print an instant: RFC3339 in UTC.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func blockerList(bs []census.Blocker) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = b.Pod + ": " + b.Reason
	}
	return strings.Join(parts, ", ")
}
