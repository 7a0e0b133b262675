package census

import (
	"strconv"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Census counts the pool's claims by their place in the rotation.
type Census struct {
	Total      int `json:"total"`
	Candidates int `json:"candidates"` // eligible now
	InBackoff  int `json:"inBackoff"`  // past the trigger, held only by retryBackoff
	InFlight   int `json:"inFlight"`   // pending or draining (draining also once its delete is issued)
	NotDue     int `json:"notDue"`     // not yet past the trigger
	OptedOut   int `json:"optedOut"`   // operator-set do-not-disrupt
	NotReady   int `json:"notReady"`
	Deleting   int `json:"deleting"` // deleted by another hand than a rotation's
	Expired    int `json:"expired"`
	NoDeadline int `json:"noDeadline"` // expireAfter Never
	ShortLead  int `json:"shortLead"`  // own expireAfter ≤ K·P + t_rot
	MaxRetry   int `json:"maxRetry"`   // highest retry-count
	// DrainBlocked counts the candidates passed over because Pods on their
	// node would block the drain (counted among Candidates too).
	DrainBlocked int `json:"drainBlocked"`
	// Skipped counts the claims an operator's skip-until keeps out.
	Skipped int `json:"skipped"`
}

// Outstanding is candidates + in_backoff (less the deferred): the work the window-missed
// evaluation judges a closed occurrence by. A candidate passed over for
// its drain blockers is deferred on purpose, not missed.
func (c Census) Outstanding() int { return c.Candidates - c.DrainBlocked + c.InBackoff }

// NoCandidateReason says, in an operator's words, why a census has no
// candidate.
func (c Census) NoCandidateReason() string {
	switch {
	case c.Total == 0:
		return "the NodePool has no NodeClaims"
	case c.DrainBlocked > 0 && c.DrainBlocked == c.Candidates:
		return "every eligible claim's node has Pods that would block the drain, and no deadline forces one yet"
	case c.InBackoff > 0:
		return "every due claim is inside its retryBackoff"
	case c.Skipped > 0 && c.NotDue+c.NoDeadline+c.Skipped == c.Total:
		return "no claim is past its age threshold but those an operator's skip-until keeps out"
	case c.NotDue+c.NoDeadline == c.Total:
		return "no claim is past its age threshold"
	}
	return "no claim is eligible"
}

// Candidate is the selected claim and its figures.
type Candidate struct {
	Claim    *karpv1.NodeClaim
	Kind     string // surge or forcefulFallback
	Deadline time.Time
	Age      time.Duration
	// Blockers are the Pods that will hold its drain: set only when its
	// deadline left no other choice (docs/design.md#drain-blockers).
	Blockers []Blocker
	// Requested: it carries an operator's rotate-next, which put it first.
	Requested bool
}

// Figures are one claim's deadline arithmetic.
type Figures struct {
	Claim     *karpv1.NodeClaim
	Deadline  time.Time // zero: expireAfter Never, or no occurrence
	Trigger   time.Time // when it becomes due by age
	RetryAt   time.Time // end of its escalated, window-clamped backoff
	ShortLead bool
	// RotateNext and SkipUntil are the operator's requests
	// (docs/design.md#manual-controls).
	RotateNext bool
	SkipUntil  time.Time
	// LastStart is, for a claim with a deadline and a skip-until, the last
	// moment a rotation of it may start and end by the deadline, windows
	// and blackouts counted.
	LastStart time.Time
	// Class is the census class the claim was counted in (Class).
	Class string
}

// Due reports whether the claim is past its age trigger at now.
func (f Figures) Due(now time.Time) bool { return !f.Trigger.IsZero() && now.After(f.Trigger) }

// BadAnnotation is a malformed annotation value on an object: reported as a
// Warning naming the object and key, never acted on.
type BadAnnotation struct {
	Object, Key, Value, Problem string
	// Effect is what the controller does about it; empty: the claim is
	// skipped.
	Effect string
}

// Sentence says it with the object it is on, as a Warning that stops a
// pass does: "NodePool/a: annotation k="v" names …".
func (b BadAnnotation) Sentence() string {
	return b.Object + ": annotation " + b.Key + "=" + strconv.Quote(b.Value) + " " + b.Problem
}

// Error says what is wrong in the words the Warnings use.
func (b BadAnnotation) Error() string {
	return b.Key + " " + strconv.Quote(b.Value) + " is " + b.Problem
}
