package policy

import (
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// The documented defaults (docs/policy.md), applied when a field is empty —
// the CRD defaults them too, but an object written before a default existed,
// or decoded from a file by rotationctl, may lack them.
const (
	DefaultMinRotationChances = 2
	DefaultReadyTimeout       = 15 * time.Minute
	DefaultCooldownAfter      = 10 * time.Minute
	DefaultRetryBackoff       = 30 * time.Minute
)

// DefaultRequired are the label keys the placeholder replicates by default.
var DefaultRequired = []string{corev1.LabelTopologyZone, corev1.LabelArchStable, "karpenter.sh/capacity-type"}

// Settings is a policy's spec parsed into typed values.
type Settings struct {
	Calendar schedule.Calendar
	// Timing is what the schedule derivation reads from the policy.
	schedule.Timing
	// Concurrency is spec.surge.maxUnavailable (and its cap): how many
	// rotations of a pool may be in flight at once. Timing.MaxUnavailable
	// is the number it resolves to for a pool (Sized), 1 until then.
	Concurrency          schedule.Concurrency
	Required, Preferred  []string
	ForcefulFallback     bool
	WholeNodeReservation bool
	PrePull              PrePull
	// HonorBudgets: the NodePool's disruption budgets bound the starts
	// (spec.surge.nodePoolBudgets, Honor unless Ignore;
	// docs/design.md#disruption-budget).
	HonorBudgets bool
}

// Resolve parses spec. Every problem is reported, each naming its field.
func Resolve(spec v1alpha1.RotationPolicySpec) (Settings, error) {
	var errs []error
	s := Settings{
		Timing:               schedule.Timing{MinRotationChances: int(spec.MinRotationChances), MaxUnavailable: 1},
		Required:             spec.Surge.MatchNodeRequirements.Required,
		Preferred:            spec.Surge.MatchNodeRequirements.Preferred,
		ForcefulFallback:     spec.Surge.ForcefulFallback.Enabled,
		WholeNodeReservation: spec.Surge.WholeNodeReservation,
		HonorBudgets:         spec.Surge.NodePoolBudgets != v1alpha1.BudgetsIgnore,
	}
	if s.MinRotationChances == 0 {
		s.MinRotationChances = DefaultMinRotationChances
	}
	if s.MinRotationChances < 1 {
		errs = append(errs, fmt.Errorf("spec.minRotationChances: %d is below the floor of 1", s.MinRotationChances))
	}
	switch spec.Surge.NodePoolBudgets {
	case "", v1alpha1.BudgetsHonor, v1alpha1.BudgetsIgnore:
	default:
		errs = append(errs, fmt.Errorf("spec.surge.nodePoolBudgets: %q is neither %s nor %s", spec.Surge.NodePoolBudgets, v1alpha1.BudgetsHonor, v1alpha1.BudgetsIgnore))
	}
	var err error
	s.Concurrency, err = concurrency(spec.Surge.MaxUnavailable, spec.Surge.MaxUnavailableCap)
	errs = append(errs, err)
	if s.Required == nil {
		s.Required = DefaultRequired
	}
	s.PrePull, err = prePull(spec.PrePull)
	errs = append(errs, err)
	s.PrePullTimeout = s.PrePull.InWindow()
	if spec.AgeThreshold != "" && spec.AgeThreshold != "auto" {
		d, err := positive("spec.ageThreshold", spec.AgeThreshold)
		errs = append(errs, err)
		s.AgeThreshold = &d
	}
	surge := spec.Surge
	s.ReadyTimeout, err = positiveOr("spec.surge.readyTimeout", surge.ReadyTimeout, DefaultReadyTimeout)
	errs = append(errs, err)
	s.RetryBackoff, err = positiveOr("spec.surge.retryBackoff", surge.RetryBackoff, DefaultRetryBackoff)
	errs = append(errs, err)
	s.CooldownAfter, err = nonNegativeOr("spec.surge.cooldownAfter", surge.CooldownAfter, DefaultCooldownAfter)
	errs = append(errs, err)
	s.FailurePause, err = optional("spec.surge.failurePause", surge.FailurePause)
	errs = append(errs, err)
	s.DrainEstimate, err = optional("spec.surge.drainEstimate", surge.DrainEstimate)
	errs = append(errs, err)
	s.ProvisioningEstimate, err = optional("spec.surge.provisioningEstimate", surge.ProvisioningEstimate)
	errs = append(errs, err)
	s.StartCutoff, err = optional("spec.surge.startCutoff", surge.StartCutoff)
	errs = append(errs, err)
	s.Blackouts, err = blackouts(spec.Blackouts)
	errs = append(errs, err)

	var entries []schedule.Entry
	for i, w := range spec.MaintenanceWindows {
		days := make([]string, len(w.Days))
		for j, d := range w.Days {
			days[j] = string(d)
		}
		e, err := schedule.ParseEntry(w.Timezone, days, w.Start, w.End)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.maintenanceWindows[%d].%w", i, err))
			continue
		}
		entries = append(entries, e)
	}
	s.Calendar = schedule.NewCalendar(entries...)
	return s, errors.Join(errs...)
}

// Inputs combines the settings with a pool's expireAfter (nil = Never) and
// terminationGracePeriod (nil = unset) for the schedule derivation.
func (s Settings) Inputs(expireAfter, tgp *time.Duration) schedule.Inputs {
	return schedule.Inputs{ExpireAfter: expireAfter, TerminationGrace: tgp, Timing: s.Timing}
}

// RequiresZone reports whether the zone is among the required keys;
// dropping it lets the surge land in another zone than the old node.
func (s Settings) RequiresZone() bool {
	for _, k := range s.Required {
		if k == corev1.LabelTopologyZone {
			return true
		}
	}
	return false
}

func parse(field, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a Go duration (e.g. 15m, 1h30m)", field, v)
	}
	return d, nil
}

func positive(field, v string) (time.Duration, error) {
	d, err := parse(field, v)
	if err == nil && d <= 0 {
		err = fmt.Errorf("%s: %q must be greater than 0", field, v)
	}
	return d, err
}

func positiveOr(field, v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	return positive(field, v)
}

func nonNegativeOr(field, v string, def time.Duration) (time.Duration, error) {
	if v == "" {
		return def, nil
	}
	d, err := parse(field, v)
	if err == nil && d < 0 {
		err = fmt.Errorf("%s: %q must not be negative", field, v)
	}
	return d, err
}

func optional(field, v string) (*time.Duration, error) {
	if v == "" {
		return nil, nil
	}
	d, err := nonNegativeOr(field, v, 0)
	return &d, err
}

// Findings are the policy's own layer-1 warnings that do not depend on the
// schedule: today, a required-key list without the zone.
func (s Settings) Findings() []schedule.Finding {
	if s.RequiresZone() {
		return nil
	}
	return []schedule.Finding{{
		Layer: 1, Reason: "ZoneNotRequired", Severity: schedule.Warning,
		Message: "surge.matchNodeRequirements.required omits topology.kubernetes.io/zone: the surge node may land in another zone than the old node",
		Remedy:  "keep topology.kubernetes.io/zone in surge.matchNodeRequirements.required",
	}}
}

// blackouts parses spec.blackouts; admission checks the same, so an error
// here is a policy stored before the check existed.
func blackouts(in []v1alpha1.Blackout) ([]schedule.Interval, error) {
	var out []schedule.Interval
	var errs []error
	for i, b := range in {
		start, err1 := time.Parse(time.RFC3339, b.Start)
		end, err2 := time.Parse(time.RFC3339, b.End)
		switch {
		case err1 != nil || err2 != nil:
			errs = append(errs, fmt.Errorf("spec.blackouts[%d]: start %q and end %q must be RFC3339 times", i, b.Start, b.End))
		case !end.After(start):
			errs = append(errs, fmt.Errorf("spec.blackouts[%d]: end %s is not after start %s", i, b.End, b.Start))
		default:
			out = append(out, schedule.Interval{Start: start, End: end, Location: time.UTC})
		}
	}
	return out, errors.Join(errs...)
}
