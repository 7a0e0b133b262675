package plan

import (
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
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
	Population       schedule.Population
	Now              time.Time
}

// Build computes the report; err names the policy field that does not resolve.
func Build(in Input) (Report, error) {
	s, err := policy.Resolve(in.Policy.Spec)
	if err != nil {
		return Report{}, err
	}
	cycle := s.Calendar.Measure(in.Now)
	inputs, d, inForce := s.Sized(s.Inputs(in.ExpireAfter, in.TerminationGrace), cycle, in.Population)
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
	r.Findings = s.Assess(inputs, d, in.Population)
	r.Fatal = schedule.HasFatal(r.Findings)
	return r, nil
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
