package announce

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/internal/budget"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// View is what the announcer reads of one pass's observation. The
// reconciler cuts it from the observation once it has decided, before it
// acts, and hands it over with what each step earns and at the end, so the
// announcer depends on the census, the policy and the surge sizing — the
// figures it reports — and never on the observer: a field here is one the
// wording below reads.
type View struct {
	Now  time.Time
	Pool *karpv1.NodePool
	// Governed: exactly one valid policy governs the pool (its findings and
	// claim warnings are said only then).
	Governed   bool
	Governance policy.Governance
	PolicyErr  error
	Settings   policy.Settings
	Derivation schedule.Derivation
	Findings   []schedule.Finding
	WindowEnd  WindowEnd
	// ClusterInFlight and ClusterCap: the cluster cap's count and Max.
	ClusterInFlight, ClusterCap int
	// Budget, Disrupted and MaxUnavailable: the pool's NodePool budget in force,
	// its claims being disrupted and the number of rotations in force
	// (docs/design.md#disruption-budget).
	Budget         budget.Allowance
	Disrupted      []string
	MaxUnavailable int

	Claims []karpv1.NodeClaim
	Census census.Result

	// Subject is the claim the pass is about (the anchor, or the
	// candidate); SubjectName names it even when it is gone.
	Subject        *karpv1.NodeClaim
	SubjectName    string
	OldNode        *corev1.Node
	Placeholder    *corev1.Pod
	SurgeHost      *corev1.Node
	SurgeHostClaim *karpv1.NodeClaim
	InducedClaim   *karpv1.NodeClaim
	Unservable     *surge.Unservable
	Sizing         *surge.Sizing
	Shortfall      *surge.Shortfall

	// BadAnnotations: malformed values found outside the table's facts;
	// ReadErrors: reads that failed without failing the pass.
	BadAnnotations []census.BadAnnotation
	ReadErrors     []error
}

// WindowEnd is the window-end gate's judgement as WindowEnding reports it
// (docs/design.md#window-end).
type WindowEnd struct {
	Close    time.Time
	Left     time.Duration
	Forecast time.Duration
	Learned  bool
}

// Candidate is the census's selected claim, nil when none.
func (v *View) Candidate() *census.Candidate { return v.Census.Candidate }
