package census

import (
	"sort"
	"time"

	"github.com/noderotation/node-rotation-controller/engine"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// Input is what a census reads: the pool's claims, the governing policy's
// settings and the pool's schedule derivation, the clock, whether a
// claim's node carries an operator's do-not-disrupt, and the Pods on a
// claim's node that would block Karpenter's drain.
type Input struct {
	Now        time.Time
	Claims     []karpv1.NodeClaim
	Settings   policy.Settings
	Derivation schedule.Derivation
	OptedOut   func(*karpv1.NodeClaim) bool
	// DrainBlockers is asked only while the candidate is chosen, in the
	// candidate order, and only until a claim is taken: it may read the
	// API server.
	DrainBlockers func(*karpv1.NodeClaim) []Blocker
	// Anchored are the claims a rotation slot of the pool names: never
	// the candidate of another slot's start, whatever their state says
	// yet (docs/design.md#throughput).
	Anchored map[string]bool
	// Surge are the claims that are surge claims of the pool's rotations
	// in flight (surge.InFlight): classified like any claim, but left out
	// of the population a percentage is of (docs/design.md#percentage-base).
	Surge map[string]bool
}

// Result is a census and what it decided.
type Result struct {
	Census    Census
	Candidate *Candidate
	// Figures of every claim with a well-formed failure record, by name.
	Figures map[string]Figures
	// Bad lists the malformed annotations that kept claims out.
	Bad []BadAnnotation
	// Population is what the layer-2 findings read.
	Population schedule.Population
	// Blocked are the eligible claims passed over, ahead of the candidate
	// in the order, because Pods on their node would block the drain.
	Blocked map[string]Blocked
	// SkipHeld are the claims an operator's skip-until keeps out that are
	// otherwise due — past their age threshold or asked for with
	// rotate-next — in the order of the claims read (docs/design.md#manual-controls).
	SkipHeld []Figures
}

// Take classifies every claim and selects the candidate: an operator's
// rotate-next first, then short-lead claims (best-effort), the earliest
// deadline, the oldest, the name (docs/design.md#age-threshold,
// docs/design.md#manual-controls).
func Take(in Input) Result {
	r := Result{Census: Census{Total: len(in.Claims)}, Figures: make(map[string]Figures, len(in.Claims))}
	var eligible []Figures
	var deadlines []time.Time
	for i := range in.Claims {
		c := &in.Claims[i]
		f, bad := figures(in, c)
		if bad != nil {
			r.Bad = append(r.Bad, *bad)
			continue
		}
		r.Bad = append(r.Bad, requests(&f)...)
		if !f.SkipUntil.IsZero() && !f.Deadline.IsZero() {
			f.LastStart = lastStart(in, f)
		}
		if !f.Deadline.IsZero() && !in.Surge[c.Name] {
			deadlines = append(deadlines, f.Deadline)
		}
		var ok bool
		f.Class, ok = r.classify(in, f)
		r.Figures[c.Name] = f
		if ok {
			eligible = append(eligible, f)
		}
	}
	r.Population = schedule.Population{Nodes: base(in.Claims, in.Surge), Burst: burst(deadlines, in.Derivation.Cycle.P)}
	if len(eligible) > 0 {
		r.Candidate = r.pick(in, eligible)
	}
	return r
}

// pick orders the eligible claims and takes the first whose node no Pod
// blocks Karpenter's drain of — or a blocked one whose deadline leaves no
// other choice — deciding whether it takes the surge or the surge-less
// forceful fallback (docs/design.md#drain-blockers). The blocked claims
// passed over are recorded; when every eligible claim is blocked and none
// is urgent, there is no candidate.
func (r *Result) pick(in Input, eligible []Figures) *Candidate {
	sort.Slice(eligible, func(i, j int) bool { return Ahead(eligible[i], eligible[j]) })
	for _, f := range eligible {
		if in.Anchored[f.Claim.Name] {
			continue // in flight in a slot: its state is written next
		}
		b := blockers(in, f.Claim)
		if urgent, ok := urgentFrom(in, f); len(b) > 0 && (!ok || in.Now.Before(urgent)) {
			if r.Blocked == nil {
				r.Blocked = map[string]Blocked{}
			}
			r.Blocked[f.Claim.Name] = Blocked{Blockers: b, UrgentFrom: urgent}
			r.Census.DrainBlocked++
			continue
		}
		return &Candidate{Claim: f.Claim, Kind: Kind(in, f), Deadline: f.Deadline, Age: in.Now.Sub(f.Claim.CreationTimestamp.Time), Blockers: b, Requested: f.RotateNext}
	}
	return nil
}

// The candidate fact's values Kind produces (rules/rotation.yaml).
var (
	KindSurge            = engine.UsesFactValue("candidate", "surge")
	KindForcefulFallback = engine.UsesFactValue("candidate", "forcefulFallback")
)

// Kind is how an eligible claim would be rotated: the surge, or the
// surge-less forceful fallback when the policy allows it and the deadline
// is nearer than a surge rotation can take.
func Kind(in Input, f Figures) string {
	if in.Settings.ForcefulFallback && !f.Deadline.IsZero() && f.Deadline.Sub(in.Now) < in.Derivation.TRot {
		return KindForcefulFallback
	}
	return KindSurge
}

// Ahead orders eligible claims: an operator's rotate-next first, then
// short-lead claims (best-effort), the earliest deadline, the oldest, the
// name. The candidate is the first.
func Ahead(a, b Figures) bool {
	switch {
	case a.RotateNext != b.RotateNext:
		return a.RotateNext // an operator's request first
	case a.ShortLead != b.ShortLead:
		return a.ShortLead
	case !a.Deadline.Equal(b.Deadline):
		return a.Deadline.Before(b.Deadline)
	case !a.Claim.CreationTimestamp.Equal(&b.Claim.CreationTimestamp):
		return a.Claim.CreationTimestamp.Before(&b.Claim.CreationTimestamp)
	}
	return a.Claim.Name < b.Claim.Name
}

// figures computes a claim's deadline, trigger and backoff; a malformed
// failure record keeps the claim out of the census.
func figures(in Input, c *karpv1.NodeClaim) (Figures, *BadAnnotation) {
	f := Figures{Claim: c}
	d := in.Derivation
	if deadline, ok := deadlineOf(c, d); ok {
		f.Deadline = deadline
		f.ShortLead = d.ShortLead(*c.Spec.ExpireAfter.Duration)
		if d.Derived {
			f.Trigger = f.Deadline.Add(-d.Lead)
		} else {
			f.Trigger = c.CreationTimestamp.Add(d.A)
		}
	}
	if c.Annotations[v1alpha1.AnnotationState] == v1alpha1.StateFailed {
		at, bad := ClaimRetryAt(c, in.Settings)
		if bad != nil {
			return f, bad
		}
		f.RetryAt = at
	}
	return f, nil
}

// The census classes of a claim, in the order they are tested: the first
// that applies is the claim's class.
const (
	ClassDeleting   = "deleting"
	ClassExpired    = "expired"
	ClassInFlight   = "inFlight"
	ClassNoDeadline = "noDeadline"
	ClassNotDue     = "notDue"
	ClassNotReady   = "notReady"
	ClassOptedOut   = "optedOut"
	ClassInBackoff  = "inBackoff"
	ClassBadState   = "badState" // a state annotation no version wrote
	ClassCandidate  = "candidate"
	ClassSkipped    = "skipped" // an operator's skip-until lies ahead
	// ClassDrainBlocked is a candidate passed over because Pods on its
	// node would block the drain (Result.Blocked); Class never returns it,
	// as it depends on the candidate order.
	ClassDrainBlocked = "drainBlocked"
)

// classify counts the claim in its census class and returns the class and
// whether the claim is eligible now.
func (r *Result) classify(in Input, f Figures) (string, bool) {
	c, cen := f.Claim, &r.Census
	if n, bad := parseRetryCount(c.Annotations[v1alpha1.AnnotationRetryCount]); bad == nil && n > cen.MaxRetry {
		cen.MaxRetry = n
	}
	if f.ShortLead {
		cen.ShortLead++
	}
	class := Class(in, f)
	switch class {
	case ClassCandidate:
		cen.Candidates++
		return class, true
	case ClassSkipped:
		cen.Skipped++
		if f.Due(in.Now) || f.RotateNext {
			r.SkipHeld = append(r.SkipHeld, f)
		}
	case ClassBadState:
		r.Bad = append(r.Bad, BadAnnotation{Object: "NodeClaim/" + c.Name, Key: v1alpha1.AnnotationState, Value: c.Annotations[v1alpha1.AnnotationState], Problem: "not a known state"})
	default:
		*counter(cen, class)++
	}
	return class, false
}

// Class is the census class of the claim whose figures are f: why it is or
// is not eligible now. Operator tools explain a claim with it; the census
// counts it.
func Class(in Input, f Figures) string {
	c := f.Claim
	state := c.Annotations[v1alpha1.AnnotationState]
	switch {
	case c.DeletionTimestamp != nil && state != v1alpha1.StateDraining:
		// a draining claim's delete is the rotation's own: Karpenter
		// drains it for the rotation in flight
		return ClassDeleting
	case state == v1alpha1.StateExpired:
		return ClassExpired
	case state == v1alpha1.StatePending || state == v1alpha1.StateDraining:
		return ClassInFlight
	case in.Now.Before(f.SkipUntil):
		return ClassSkipped
	case f.Deadline.IsZero() && !f.RotateNext:
		return ClassNoDeadline
	case !in.Now.After(f.Trigger) && !f.RotateNext:
		return ClassNotDue
	case !claimReady(c):
		return ClassNotReady
	case in.OptedOut != nil && in.OptedOut(c):
		return ClassOptedOut
	case state == v1alpha1.StateFailed && in.Now.Before(f.RetryAt):
		return ClassInBackoff
	case state != "" && state != v1alpha1.StateFailed:
		return ClassBadState
	}
	return ClassCandidate
}

// counter is the census count of a non-eligible class.
func counter(cen *Census, class string) *int {
	switch class {
	case ClassDeleting:
		return &cen.Deleting
	case ClassExpired:
		return &cen.Expired
	case ClassInFlight:
		return &cen.InFlight
	case ClassNoDeadline:
		return &cen.NoDeadline
	case ClassNotDue:
		return &cen.NotDue
	case ClassNotReady:
		return &cen.NotReady
	case ClassOptedOut:
		return &cen.OptedOut
	}
	return &cen.InBackoff
}

// claimReady reports the claim's Ready condition is True.
func claimReady(c *karpv1.NodeClaim) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == "Ready" {
			return cond.Status == "True"
		}
	}
	return false
}

// deadlineOf is when Karpenter expires the claim — creation + its own
// expireAfter — when the derivation judges deadlines at all.
func deadlineOf(c *karpv1.NodeClaim, d schedule.Derivation) (time.Time, bool) {
	e := c.Spec.ExpireAfter.Duration
	if e == nil || d.NoDeadline || !d.Cycle.HasOccurrence {
		return time.Time{}, false
	}
	return c.CreationTimestamp.Add(*e), true
}

// PopulationOf is what layer 2 reads of a pool's claims under d, without
// a census: how many there are, the surge claims of the rotations in
// flight left out, and the most deadlines within one P of each other —
// what Take computes, for the policy status.
func PopulationOf(claims []karpv1.NodeClaim, surge map[string]bool, d schedule.Derivation) schedule.Population {
	deadlines := make([]time.Time, 0, len(claims))
	for i := range claims {
		if t, ok := deadlineOf(&claims[i], d); ok && !surge[claims[i].Name] {
			deadlines = append(deadlines, t)
		}
	}
	return schedule.Population{Nodes: base(claims, surge), Burst: burst(deadlines, d.Cycle.P)}
}

// base is the number a percentage of the pool is of: its claims but the
// surge claims of its rotations in flight. An old claim being deleted
// stays in it until it is gone (docs/design.md#percentage-base).
func base(claims []karpv1.NodeClaim, surge map[string]bool) int {
	n := len(claims)
	for i := range claims {
		if surge[claims[i].Name] {
			n--
		}
	}
	return n
}

// burst is the largest number of deadlines within one period P of each
// other: claims that compete for the same K occurrences.
func burst(deadlines []time.Time, p time.Duration) int {
	sort.Slice(deadlines, func(i, j int) bool { return deadlines[i].Before(deadlines[j]) })
	best, lo := 0, 0
	for hi := range deadlines {
		for deadlines[hi].Sub(deadlines[lo]) > p {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// Instants are the future moments a claim's class can change: each age
// trigger, backoff end and skip-until, and the instant a blocked claim
// becomes urgent.
func (r Result) Instants() []time.Time {
	out := make([]time.Time, 0, 2*len(r.Figures))
	for _, f := range r.Figures {
		out = append(out, f.Trigger, f.RetryAt)
		if !f.SkipUntil.IsZero() {
			out = append(out, f.SkipUntil)
		}
	}
	for _, b := range r.Blocked {
		if !b.UrgentFrom.IsZero() {
			out = append(out, b.UrgentFrom)
		}
	}
	return out
}
