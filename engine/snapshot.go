package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/interpreter"
)

// Snapshot is the observation the facts are computed from: what one
// reconcile pass saw of a NodePool, its governing policy, the claim its
// anchor names (or the selected candidate), the placeholder and surge host.
// Annotation values are carried raw, exactly as stored, so a malformed one
// surfaces as a FactError naming the fact, key and value — never a panic.
type Snapshot struct {
	Now       time.Time         `json:"now"`
	Pool      PoolObservation   `json:"pool"`
	Policy    PolicyObservation `json:"policy"`
	Claim     ClaimObservation  `json:"claim"`
	Candidate string            `json:"candidate"` // none, surge or forcefulFallback (idle pools)
	// CandidateDrainBlocked: Pods on the candidate's node would block its
	// drain; it was taken because its deadline leaves no other choice.
	CandidateDrainBlocked bool `json:"candidateDrainBlocked,omitempty"`
	// CandidateRequested: the candidate is first because an operator's
	// noderotation.io/rotate-next asks for it (docs/design.md#manual-controls).
	CandidateRequested bool `json:"candidateRequested,omitempty"`
	// SkipHeld: an operator's noderotation.io/skip-until keeps out a claim
	// that is otherwise due (docs/design.md#manual-controls).
	SkipHeld bool `json:"skipHeld,omitempty"`
	// Stranded is none, claim or artefacts: rotation artefacts of the pool
	// its anchor does not name (empty reads as none).
	Stranded string           `json:"stranded,omitempty"`
	Surge    SurgeObservation `json:"surge"`
	// Outstanding is candidates + in_backoff, less the candidates passed
	// over for their drain blockers: the work the window-missed
	// evaluation judges a closed occurrence by.
	Outstanding int `json:"outstanding"`
	// Lost names a claim of the pool Karpenter deleted for expiry with no
	// rotation of it in flight that the pool does not record yet, empty
	// when none (docs/design.md#coverage).
	Lost string `json:"lost,omitempty"`
}

// PoolObservation is the NodePool's side of the snapshot.
type PoolObservation struct {
	Governance string `json:"governance"` // governed, ungoverned, conflict or invalid
	Static     bool   `json:"static"`     // spec.replicas set
	Feasible   bool   `json:"feasible"`   // no fatal finding
	WindowOpen bool   `json:"windowOpen"`
	// WindowEnding: too little of the open occurrence is left to start a
	// rotation (docs/design.md#window-end).
	WindowEnding bool `json:"windowEnding,omitempty"`
	// ClusterCapReached: -max-concurrent-rotations rotations are in flight
	// in the cluster's other pools (docs/design.md#cluster-cap).
	ClusterCapReached bool `json:"clusterCapReached,omitempty"`
	// BudgetReached: as many of the pool's claims are being disrupted
	// besides this slot's own rotation — by Karpenter's drift,
	// consolidation or repair, or by the pool's other rotations, each once
	// — as the number of rotations in force or the strictest NodePool
	// disruption budget in force allows; that budget stops being in force
	// at BudgetUntil (RFC 3339, empty without an end;
	// docs/design.md#disruption-budget).
	BudgetReached bool   `json:"budgetReached,omitempty"`
	BudgetUntil   string `json:"budgetUntil,omitempty"`
	// Blackout: one of the policy's blackouts is in force now;
	// BlackoutSinceStamp: one overlapped the occurrence stamped in
	// window-opened-at (docs/design.md#manual-controls).
	Blackout           bool   `json:"blackout,omitempty"`
	BlackoutSinceStamp bool   `json:"blackoutSinceStamp,omitempty"`
	Anchor             string `json:"anchor,omitempty"`         // noderotation.io/active-rotation
	RotationState      string `json:"rotationState,omitempty"`  // noderotation.io/active-rotation-state
	RotationMode       string `json:"rotationMode,omitempty"`   // noderotation.io/rotation-mode
	Freeze             string `json:"freeze,omitempty"`         // noderotation.io/freeze
	LastRotationAt     string `json:"lastRotationAt,omitempty"` // noderotation.io/last-rotation-at
	LastFailureAt      string `json:"lastFailureAt,omitempty"`  // noderotation.io/last-failure-at
	WindowOpenedAt     string `json:"windowOpenedAt,omitempty"` // noderotation.io/window-opened-at
	DrainingAt         string `json:"drainingAt,omitempty"`     // noderotation.io/draining-at
	// PrePull is the pre-pull phase's record, written once at its end
	// (noderotation.io/prepull; docs/design.md#pre-pull).
	PrePull string `json:"prePull,omitempty"`
}

// PolicyObservation carries the resolved policy's durations.
type PolicyObservation struct {
	ReadyTimeout  Duration `json:"readyTimeout"`
	CooldownAfter Duration `json:"cooldownAfter"`
	FailurePause  Duration `json:"failurePause"`
	// DrainBound is tGP + buffer: a drain longer than this is stuck.
	DrainBound Duration `json:"drainBound"`
	// PrePull: the policy's pre-pull phase is on, for at most
	// PrePullTimeout from the end of the surge wait (docs/design.md#pre-pull).
	PrePull        bool     `json:"prePull,omitempty"`
	PrePullTimeout Duration `json:"prePullTimeout,omitempty"`
}

// ClaimObservation is the old NodeClaim's side of the snapshot.
type ClaimObservation struct {
	Exists     bool      `json:"exists"`
	State      string    `json:"state,omitempty"`      // noderotation.io/state
	StartedAt  string    `json:"startedAt,omitempty"`  // noderotation.io/started-at
	FailedAt   string    `json:"failedAt,omitempty"`   // noderotation.io/failed-at
	RetryCount string    `json:"retryCount,omitempty"` // noderotation.io/retry-count
	Deleting   bool      `json:"deleting"`
	DeletedAt  time.Time `json:"deletedAt,omitempty"` // deletionTimestamp
	// RetryAt is when the claim's escalated, window-clamped backoff ends;
	// computed by the observer from FailedAt and RetryCount, which it
	// parses once. BackoffError is what was malformed in them (the key,
	// the value and why), empty when they parse: the retryDue fact's error.
	RetryAt      time.Time `json:"retryAt,omitempty"`
	BackoffError string    `json:"backoffError,omitempty"`
}

// SurgeObservation is the placeholder's and surge host's side.
type SurgeObservation struct {
	PlaceholderExists bool `json:"placeholderExists"`
	PairedNodes       bool `json:"pairedNodes,omitempty"` // a node is labelled surge-for=<anchor>
	Ready             bool `json:"ready"`                 // surge_ready (docs/design.md#surge)
	Headroom          bool `json:"headroom"`              // the placeholder fits spec.limits − status.resources
	// Unservable is Karpenter's word that it cannot serve the placeholder:
	// Unschedulable or LaunchFailed, empty when it has said nothing
	// (docs/design.md#fail-fast).
	Unservable string `json:"unservable,omitempty"`
	// PrePull is the rotation's pre-pull Pod as observed: absent (one is
	// needed, none exists), running, ended (Succeeded, Failed or
	// terminating), or empty when no Pod exists and none is needed — the
	// phase is off, nothing is left to pull, or the surge node runs no
	// Linux (docs/design.md#pre-pull).
	PrePull string `json:"prePull,omitempty"`
}

// input is one CEL variable the facts may read, with its accessor and, for
// raw annotation values, the annotation an operator would look at.
type input struct {
	name string
	typ  *cel.Type
	get  func(*Snapshot) any
	key  string
}

// inputs is the observation schema: every variable a fact expression may
// reference. Guards may reference none of these — only facts.
var inputs = []input{
	{"now", cel.TimestampType, func(s *Snapshot) any { return s.Now }, ""},
	{"pool.governance", cel.StringType, func(s *Snapshot) any { return s.Pool.Governance }, ""},
	{"pool.static", cel.BoolType, func(s *Snapshot) any { return s.Pool.Static }, ""},
	{"pool.feasible", cel.BoolType, func(s *Snapshot) any { return s.Pool.Feasible }, ""},
	{"pool.windowOpen", cel.BoolType, func(s *Snapshot) any { return s.Pool.WindowOpen }, ""},
	{"pool.windowEnding", cel.BoolType, func(s *Snapshot) any { return s.Pool.WindowEnding }, ""},
	{"pool.clusterCapReached", cel.BoolType, func(s *Snapshot) any { return s.Pool.ClusterCapReached }, ""},
	{"pool.budgetReached", cel.BoolType, func(s *Snapshot) any { return s.Pool.BudgetReached }, ""},
	{"pool.budgetUntil", cel.StringType, func(s *Snapshot) any { return s.Pool.BudgetUntil }, ""},
	{"pool.blackout", cel.BoolType, func(s *Snapshot) any { return s.Pool.Blackout }, ""},
	{"pool.blackoutSinceStamp", cel.BoolType, func(s *Snapshot) any { return s.Pool.BlackoutSinceStamp }, ""},
	{"pool.anchor", cel.StringType, func(s *Snapshot) any { return s.Pool.Anchor }, "noderotation.io/active-rotation"},
	{"pool.rotationState", cel.StringType, func(s *Snapshot) any { return s.Pool.RotationState }, "noderotation.io/active-rotation-state"},
	{"pool.rotationMode", cel.StringType, func(s *Snapshot) any { return s.Pool.RotationMode }, "noderotation.io/rotation-mode"},
	{"pool.freeze", cel.StringType, func(s *Snapshot) any { return s.Pool.Freeze }, "noderotation.io/freeze"},
	{"pool.lastRotationAt", cel.StringType, func(s *Snapshot) any { return s.Pool.LastRotationAt }, "noderotation.io/last-rotation-at"},
	{"pool.lastFailureAt", cel.StringType, func(s *Snapshot) any { return s.Pool.LastFailureAt }, "noderotation.io/last-failure-at"},
	{"pool.windowOpenedAt", cel.StringType, func(s *Snapshot) any { return s.Pool.WindowOpenedAt }, "noderotation.io/window-opened-at"},
	{"pool.drainingAt", cel.StringType, func(s *Snapshot) any { return s.Pool.DrainingAt }, "noderotation.io/draining-at"},
	{"pool.prePull", cel.StringType, func(s *Snapshot) any { return s.Pool.PrePull }, "noderotation.io/prepull"},
	{"policy.readyTimeout", cel.DurationType, func(s *Snapshot) any { return time.Duration(s.Policy.ReadyTimeout) }, ""},
	{"policy.cooldownAfter", cel.DurationType, func(s *Snapshot) any { return time.Duration(s.Policy.CooldownAfter) }, ""},
	{"policy.failurePause", cel.DurationType, func(s *Snapshot) any { return time.Duration(s.Policy.FailurePause) }, ""},
	{"policy.drainBound", cel.DurationType, func(s *Snapshot) any { return time.Duration(s.Policy.DrainBound) }, ""},
	{"policy.prePull", cel.BoolType, func(s *Snapshot) any { return s.Policy.PrePull }, ""},
	{"policy.prePullTimeout", cel.DurationType, func(s *Snapshot) any { return time.Duration(s.Policy.PrePullTimeout) }, ""},
	{"claim.exists", cel.BoolType, func(s *Snapshot) any { return s.Claim.Exists }, ""},
	{"claim.state", cel.StringType, func(s *Snapshot) any { return s.Claim.State }, "noderotation.io/state"},
	{"claim.startedAt", cel.StringType, func(s *Snapshot) any { return s.Claim.StartedAt }, "noderotation.io/started-at"},
	{"claim.failedAt", cel.StringType, func(s *Snapshot) any { return s.Claim.FailedAt }, "noderotation.io/failed-at"},
	{"claim.retryCount", cel.StringType, func(s *Snapshot) any { return s.Claim.RetryCount }, "noderotation.io/retry-count"},
	{"claim.deleting", cel.BoolType, func(s *Snapshot) any { return s.Claim.Deleting }, ""},
	{"claim.deletedAt", cel.TimestampType, func(s *Snapshot) any { return s.Claim.DeletedAt }, ""},
	{"claim.retryAt", cel.TimestampType, func(s *Snapshot) any { return s.Claim.RetryAt }, ""},
	{"claim.backoffError", cel.StringType, func(s *Snapshot) any { return s.Claim.BackoffError }, ""},
	{"candidate", cel.StringType, func(s *Snapshot) any { return s.Candidate }, ""},
	{"candidateDrainBlocked", cel.BoolType, func(s *Snapshot) any { return s.CandidateDrainBlocked }, ""},
	{"candidateRequested", cel.BoolType, func(s *Snapshot) any { return s.CandidateRequested }, ""},
	{"skipHeld", cel.BoolType, func(s *Snapshot) any { return s.SkipHeld }, ""},
	{"stranded", cel.StringType, func(s *Snapshot) any { return s.Stranded }, ""},
	{"surge.placeholderExists", cel.BoolType, func(s *Snapshot) any { return s.Surge.PlaceholderExists }, ""},
	{"surge.pairedNodes", cel.BoolType, func(s *Snapshot) any { return s.Surge.PairedNodes }, ""},
	{"surge.ready", cel.BoolType, func(s *Snapshot) any { return s.Surge.Ready }, ""},
	{"surge.headroom", cel.BoolType, func(s *Snapshot) any { return s.Surge.Headroom }, ""},
	{"surge.unservable", cel.StringType, func(s *Snapshot) any { return s.Surge.Unservable }, ""},
	{"surge.prePull", cel.StringType, func(s *Snapshot) any { return s.Surge.PrePull }, ""},
	{"outstanding", cel.IntType, func(s *Snapshot) any { return int64(s.Outstanding) }, ""},
	{"lost", cel.StringType, func(s *Snapshot) any { return s.Lost }, ""},
}

var inputIndex = func() map[string]int {
	m := make(map[string]int, len(inputs))
	for i, in := range inputs {
		m[in.name] = i
	}
	return m
}()

// snapshotActivation resolves input names straight from the snapshot
// through inputs, the one list of them, without building a map per
// evaluation. (A hand-written switch over the hottest names, kept in step
// with the list by a test, bought nothing measurable: docs/performance.md,
// Rules engine.)
type snapshotActivation struct{ s *Snapshot }

func (a snapshotActivation) ResolveName(name string) (any, bool) {
	if i, ok := inputIndex[name]; ok {
		return inputs[i].get(a.s), true
	}
	return nil, false
}

func (a snapshotActivation) Parent() interpreter.Activation { return nil }

// Duration is a time.Duration that reads and writes as a Go duration string
// ("15m") in snapshots and golden files.
type Duration time.Duration

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string such as \"15m\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}
