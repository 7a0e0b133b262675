package observe

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/budget"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// Observation is what one pass saw of one NodePool: the pool's own
// observation (census, findings, stranded artefacts, the window), and in
// Slots one copy per rotation slot the pass decides for, each with its
// subject and the objects around it (docs/design.md#throughput).
type Observation struct {
	Now  time.Time
	Pool *karpv1.NodePool

	// Slot is the rotation slot a per-slot copy is about; 0 on the pool's
	// own observation.
	Slot v1alpha1.Slot
	// Slots are the pass's per-slot observations: each anchored slot in
	// slot order, then the free slot below the number in force that a
	// start or a re-adoption takes, if there is one. The pool's own
	// observation carries the first one's subject fields and snapshot too,
	// so a tool that looks at one rotation reads them there.
	Slots []*Observation

	// Governance and, when exactly one valid policy governs, its settings.
	Governance policy.Governance
	PolicyErr  error // the winning policy does not resolve (Invalid)
	Settings   policy.Settings
	Derivation schedule.Derivation
	Findings   []schedule.Finding
	// Coverage is layer 2's verdict at the number in force
	// (docs/design.md#coverage-verdict); zero when not governed.
	Coverage schedule.Coverage
	// InForce is how many rotations the pool may have in flight at once,
	// and why (docs/design.md#throughput); zero when it is not governed.
	InForce    schedule.InForce
	WindowOpen bool
	// WindowEnd is the window-end gate's judgement (docs/design.md#window-end).
	WindowEnd WindowEnd
	// ClusterInFlight counts the rotations in flight in the cluster's other
	// pools for the cap (docs/design.md#cluster-cap); -1 when there is none.
	ClusterInFlight int
	// ClusterCap is the cap's Max, 0 when there is none.
	ClusterCap int
	// Disruption counts the pool's claims being disrupted, by Karpenter or
	// by a rotation, and Budget is its NodePool budgets' allowance now
	// (docs/design.md#disruption-budget); a governed pool's only, and with
	// nodePoolBudgets: Ignore its rotations alone against no budget.
	Disruption budget.Count
	Budget     budget.Allowance

	Claims []karpv1.NodeClaim // the pool's claims
	// Census is the classification of Claims (only Total when the pool is
	// not governed), with the candidate and each claim's figures.
	Census census.Result
	// CensusInput is what the census read, for explaining one claim's class
	// (census.Class) the way the census judged it.
	CensusInput census.Input

	// Subject is the claim this pass is about: the anchored claim, or the
	// selected candidate when the pool is idle. Nil when the anchored
	// claim is gone or there is no candidate.
	Subject     *karpv1.NodeClaim
	SubjectName string

	OldNode        *corev1.Node
	Placeholder    *corev1.Pod
	SurgeHost      *corev1.Node
	SurgeHostClaim *karpv1.NodeClaim
	// InducedClaim is the surge NodeClaim this attempt induced, when one is
	// known: the claim named by surge-claim, else the placeholder's host's
	// claim, else a claim of the pool with no node yet created since
	// started-at. A rollback reaps it (docs/design.md#surge).
	InducedClaim *karpv1.NodeClaim
	// Unservable is Karpenter's word that it cannot serve this attempt's
	// placeholder, read once the placeholder has waited out
	// surge.UnservableGrace unbound (docs/design.md#fail-fast); nil
	// otherwise.
	Unservable *surge.Unservable
	// Sizing and Shortfall are computed only when a placeholder may be
	// needed (a start, a retry, or a missing placeholder while pending).
	Sizing    *surge.Sizing
	Shortfall *surge.Shortfall
	// AvoidHostnames: the subject's and near-deadline nodes' hostnames.
	AvoidHostnames []string
	// PrePull is the rotation's pre-pull phase (docs/design.md#pre-pull).
	PrePull PrePull

	// Stranded are the pool's rotation artefacts no slot's anchor names;
	// a per-slot copy carries them only when it is the slot that handles
	// them (slots). AnchorPaired: a node of the pool carries
	// surge-for=<the slot's anchor>; paired lists every surge-for value on
	// the pool's nodes.
	Stranded     Stranded
	AnchorPaired bool
	paired       map[string]bool
	// placeholders are the pool's placeholder Pods (a governed pool's);
	// nodes are the pool's nodes.
	placeholders []*corev1.Pod
	nodes        []corev1.Node

	// Lost is a claim of the pool lost to Karpenter's expiry that the pool
	// does not record yet, the one deleted first; nil when none
	// (docs/design.md#coverage).
	Lost *Lost

	// ReadErrors are reads that failed without failing the pass (a
	// placeholder's Events): the reconciler logs each.
	ReadErrors []error
	// BadAnnotations are malformed values found outside the engine's facts
	// (e.g. on a claim considered for candidacy); each becomes a Warning.
	BadAnnotations []census.BadAnnotation

	Snapshot engine.Snapshot
	inputs   schedule.Inputs         // what Derivation was derived from
	podsOn   map[string][]corev1.Pod // Pods by node, listed once per pass
	// NextInstant is the next moment something time-based changes.
	NextInstant time.Time
}

// The governance fact's values, as GovernanceState produces them.
var (
	governanceGoverned   = engine.UsesFactValue("governance", "governed")
	governanceUngoverned = engine.UsesFactValue("governance", "ungoverned")
	governanceConflict   = engine.UsesFactValue("governance", "conflict")
	governanceInvalid    = engine.UsesFactValue("governance", "invalid")
)

// Governed reports whether exactly one valid policy governs the pool.
func (o *Observation) Governed() bool { return o.GovernanceState() == governanceGoverned }

// GovernanceState is the engine's governance fact: governed, ungoverned,
// conflict (a tie) or invalid (docs/design.md#governance).
func (o *Observation) GovernanceState() string {
	switch {
	case len(o.Governance.Conflict) > 0:
		return governanceConflict
	case !o.Governance.Governed():
		return governanceUngoverned
	case o.PolicyErr != nil:
		return governanceInvalid
	}
	return governanceGoverned
}

// Candidate is the census's selected claim, nil when none.
func (o *Observation) Candidate() *census.Candidate { return o.Census.Candidate }

// Anchor is the claim the observation's slot names, "" when it is free (or
// on the pool's own observation).
func (o *Observation) Anchor() string {
	if o.Slot == 0 {
		return ""
	}
	return o.Pool.Annotations[o.Slot.Key(v1alpha1.AnnotationActiveRotation)]
}
