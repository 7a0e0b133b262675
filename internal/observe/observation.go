package observe

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// Observation is what one pass saw of one NodePool.
type Observation struct {
	Now  time.Time
	Pool *karpv1.NodePool

	// Governance and, when exactly one valid policy governs, its settings.
	Governance policy.Governance
	PolicyErr  error // the winning policy does not resolve (Invalid)
	Settings   policy.Settings
	Derivation schedule.Derivation
	Findings   []schedule.Finding
	WindowOpen bool

	Claims []karpv1.NodeClaim // the pool's claims
	Census Census

	// Subject is the claim this pass is about: the anchored claim, or the
	// selected candidate when the pool is idle. Nil when the anchored
	// claim is gone or there is no candidate.
	Subject     *karpv1.NodeClaim
	SubjectName string
	Candidate   *Candidate

	OldNode        *corev1.Node
	Placeholder    *corev1.Pod
	SurgeHost      *corev1.Node
	SurgeHostClaim *karpv1.NodeClaim
	// Sizing and Shortfall are computed only when a placeholder may be
	// needed (a start, a retry, or a missing placeholder while pending).
	Sizing    *surge.Sizing
	Shortfall *surge.Shortfall
	// AvoidHostnames: the subject's and near-deadline nodes' hostnames.
	AvoidHostnames []string

	// BadAnnotations are malformed values found outside the engine's facts
	// (e.g. on a claim considered for candidacy); each becomes a Warning.
	BadAnnotations []BadAnnotation

	Snapshot engine.Snapshot
	inputs   schedule.Inputs
	figures  map[string]claimFigures // by claim name, from the census
	// NextInstant is the next moment something time-based changes.
	NextInstant time.Time
}

// Governed reports whether exactly one valid policy governs the pool.
func (o *Observation) Governed() bool { return governanceState(o) == "governed" }

// BadAnnotation is a malformed annotation on an object.
type BadAnnotation struct {
	Object, Key, Value, Problem string
}

// Candidate is the selected claim and its figures.
type Candidate struct {
	Claim    *karpv1.NodeClaim
	Kind     string // surge or forcefulFallback
	Deadline time.Time
	Age      time.Duration
}

// Census counts the pool's claims by their place in the rotation.
type Census struct {
	Total      int `json:"total"`
	Candidates int `json:"candidates"` // eligible now
	InBackoff  int `json:"inBackoff"`  // past the trigger, held only by retryBackoff
	InFlight   int `json:"inFlight"`   // pending or draining
	NotDue     int `json:"notDue"`     // not yet past the trigger
	OptedOut   int `json:"optedOut"`   // operator-set do-not-disrupt
	NotReady   int `json:"notReady"`
	Deleting   int `json:"deleting"`
	Expired    int `json:"expired"`
	NoDeadline int `json:"noDeadline"` // expireAfter Never
	ShortLead  int `json:"shortLead"`  // own expireAfter ≤ K·P + t_rot
	MaxRetry   int `json:"maxRetry"`   // highest retry-count
}

// Outstanding is candidates + in_backoff: the work the window-missed
// evaluation judges a closed occurrence by.
func (c Census) Outstanding() int { return c.Candidates + c.InBackoff }
