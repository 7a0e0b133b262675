package plan

import (
	"math"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/budget"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// Report is what `rotationctl plan` prints, in every output format.
type Report struct {
	Policy                 string `json:"policy"`
	NodePool               string `json:"nodePool,omitempty"`
	ExpireAfter            string `json:"expireAfter"`
	TerminationGracePeriod string `json:"terminationGracePeriod"`
	AlwaysOpen             bool   `json:"alwaysOpen"`
	P                      string `json:"P"`
	D                      string `json:"D"`
	Gap                    string `json:"gap"`
	TRot                   string `json:"tRot"`
	TRotEst                string `json:"tRotEst"`
	// PrePullTimeout is spec.prePull.timeout when the phase is on: t_rot and
	// t_rot_est include it (docs/design.md#pre-pull); empty when off.
	PrePullTimeout string `json:"prePullTimeout,omitempty"`
	// StartHold is the end of each occurrence no rotation starts in
	// (t_rot_est − startCutoff); empty when surge.startCutoff is unset.
	StartHold    string `json:"startHold,omitempty"`
	A            string `json:"A"`
	AgeThreshold string `json:"ageThreshold"` // auto or override
	G            int    `json:"G"`
	// MaxUnavailable is the policy's spec.surge.maxUnavailable; InForce the
	// number of rotations at once it resolves to for the pool, and why
	// (docs/design.md#throughput). C is counted at InForce.N.
	MaxUnavailable  string           `json:"maxUnavailable"`
	InForce         schedule.InForce `json:"inForce"`
	C               int              `json:"C"`
	NextOccurrences []Occurrence     `json:"nextOccurrences"`
	// Blackouts are the policy's blackouts not yet over: no start in them
	// (docs/design.md#manual-controls).
	Blackouts []v1alpha1.Blackout `json:"blackouts,omitempty"`
	Findings  []schedule.Finding  `json:"findings"`
	Fatal     bool                `json:"fatal"`
	// Budgets are the NodePool's disruption budgets as a reviewer reads
	// them; the coverage reads them over time when the policy honours
	// them (docs/design.md#budget-forecast).
	Budgets []string `json:"budgets,omitempty"`
	// Coverage is layer 2's verdict for the pool's nodes (--nodes), the
	// one the RotationPolicy's Feasible condition gives
	// (docs/design.md#coverage-verdict); Burst is the burst it judged.
	Coverage schedule.Coverage `json:"coverage"`
}

// Occurrence is one upcoming window occurrence in its own time zone.
type Occurrence struct {
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Timezone string    `json:"timezone"`
}

// Input is everything the report is computed from.
type Input struct {
	Policy           v1alpha1.RotationPolicy
	NodePool         string
	ExpireAfter      *time.Duration // nil = Never
	TerminationGrace *time.Duration // nil = unset
	// EKSAutoMode holds the pool to EKS Auto Mode's 21-day node lifetime.
	EKSAutoMode bool
	// Budgets are the NodePool's spec.disruption.budgets.
	Budgets []karpv1.Budget
	// Population is the pool's; a negative Burst is a pool in steady
	// state: its claims' deadlines as spread as their ages, so the claims
	// due in one period are N·P/A.
	Population schedule.Population
	Now        time.Time
}

// Build computes the report; err names the policy field that does not resolve.
func Build(in Input) (Report, error) {
	s, err := policy.Resolve(in.Policy.Spec)
	if err != nil {
		return Report{}, err
	}
	cycle := s.Calendar.Measure(in.Now)
	base := s.Inputs(in.ExpireAfter, in.TerminationGrace)
	if in.EKSAutoMode {
		base.LifetimeCap = schedule.EKSAutoModeLifetime
	}
	pop := in.Population
	if pop.Burst < 0 {
		pop.Burst = steadyBurst(pop.Nodes, schedule.Derive(base, cycle))
	}
	inputs, d, inForce := s.Sized(base, cycle, pop)
	fd := schedule.FormatDuration
	r := Report{
		Policy: in.Policy.Name, NodePool: in.NodePool,
		ExpireAfter: "Never", TerminationGracePeriod: "unset",
		AlwaysOpen: cycle.AlwaysOpen, P: fd(cycle.P), D: fd(cycle.D), Gap: fd(cycle.Gap),
		TRot: fd(d.TRot), TRotEst: fd(d.TRotEst), A: fd(d.A), AgeThreshold: "auto", G: d.G, C: d.C,
		MaxUnavailable: s.Concurrency.String(), InForce: inForce,
	}
	for i, b := range s.Blackouts {
		if b.End.After(in.Now) {
			r.Blackouts = append(r.Blackouts, in.Policy.Spec.Blackouts[i])
		}
	}
	if inputs.PrePullTimeout > 0 {
		r.PrePullTimeout = fd(inputs.PrePullTimeout)
	}
	if s.StartCutoff != nil && !cycle.AlwaysOpen {
		r.StartHold = fd(d.StartHold)
	}
	if in.ExpireAfter != nil {
		r.ExpireAfter = fd(*in.ExpireAfter)
	}
	if in.TerminationGrace != nil {
		r.TerminationGracePeriod = fd(*in.TerminationGrace)
	}
	if !d.Derived && s.AgeThreshold != nil {
		r.AgeThreshold = "override"
	}
	if cycle.AlwaysOpen {
		r.Gap = "none"
	}
	r.NextOccurrences = nextOccurrences(s.Calendar, in.Now, 3)
	r.Findings = s.Assess(inputs, d, pop)
	r.Fatal = schedule.HasFatal(r.Findings)
	np := &karpv1.NodePool{}
	np.Spec.Disruption.Budgets = in.Budgets
	for i := range in.Budgets {
		r.Budgets = append(r.Budgets, budget.Describe(&in.Budgets[i]))
	}
	r.Coverage = s.Coverage(base, cycle, np, pop, in.Now)
	return r, nil
}

// steadyBurst is the claims of a pool in steady state whose deadlines fall
// within one period P: rotated at age A, its claims' ages — and so their
// deadlines — spread evenly over A, so N·P/A of them, rounded up (all of
// them when the age threshold is not positive).
func steadyBurst(nodes int, d schedule.Derivation) int {
	if d.A <= 0 || d.Cycle.P <= 0 {
		return nodes
	}
	return min(nodes, int(math.Ceil(float64(nodes)*float64(d.Cycle.P)/float64(d.A))))
}

// nextOccurrences lists up to n occurrences open now or opening after now.
func nextOccurrences(cal schedule.Calendar, now time.Time, n int) []Occurrence {
	var out []Occurrence
	for _, o := range cal.Occurrences(now, now.Add(3*7*24*time.Hour)) {
		if len(out) == n || o.Duration() >= 7*24*time.Hour {
			break
		}
		out = append(out, Occurrence{Start: o.Start.In(o.Location), End: o.End.In(o.Location), Timezone: o.Location.String()})
	}
	return out
}
