package schedule

import "time"

const (
	// Buffer is 4 × the 30s short requeue: the slack t_rot allows
	// (docs/design.md#age-threshold).
	Buffer = 2 * time.Minute
	// TGPFallback stands in for an unset terminationGracePeriod.
	TGPFallback = time.Hour
	// MaxBackoffFactor caps the escalated retry backoff.
	MaxBackoffFactor = 8
)

// Timing is what a RotationPolicy contributes to the derivation. A nil
// pointer means unset (the estimates and failurePause: their defaults; the
// age threshold: auto).
type Timing struct {
	MinRotationChances   int
	AgeThreshold         *time.Duration // nil = auto
	ReadyTimeout         time.Duration
	CooldownAfter        time.Duration
	RetryBackoff         time.Duration
	FailurePause         *time.Duration
	DrainEstimate        *time.Duration
	ProvisioningEstimate *time.Duration
	// PrePullTimeout bounds the pre-pull phase between a ready surge and
	// the drain (docs/design.md#pre-pull); 0 when the phase is off. It
	// lengthens t_rot and t_rot_est by itself.
	PrePullTimeout time.Duration
	MaxUnavailable int
	// StartCutoff is how far past an occurrence's close a rotation may be
	// forecast to end and still start (docs/design.md#window-end); nil is
	// the default, the forecast itself, which holds no start.
	StartCutoff *time.Duration
	// Blackouts are intervals in which no rotation starts
	// (docs/design.md#manual-controls). The forecast skips them; the
	// figures do not count them (they are one-off, not the cycle).
	Blackouts []Interval
}

// BlackoutAt is the blackout in force at t, if any.
func (t Timing) BlackoutAt(at time.Time) (Interval, bool) {
	for _, b := range t.Blackouts {
		if b.Contains(at) {
			return b, true
		}
	}
	return Interval{}, false
}

// AfterBlackouts is the first instant at or after at outside every
// blackout (blackouts that touch or overlap are crossed in turn).
func (t Timing) AfterBlackouts(at time.Time) time.Time {
	for {
		b, in := t.BlackoutAt(at)
		if !in {
			return at
		}
		at = b.End
	}
}

// StartHold is how long before an occurrence's close no rotation starts:
// the forecast less the cutoff, never negative; 0 with the default cutoff.
func (t Timing) StartHold(forecast time.Duration) time.Duration {
	if t.StartCutoff == nil {
		return 0
	}
	return max(forecast-*t.StartCutoff, 0)
}

// Inputs are the durations the derivation reads: E and tGP from the NodePool
// template (nil: "Never" and unset), the rest from the policy.
type Inputs struct {
	ExpireAfter      *time.Duration
	TerminationGrace *time.Duration
	// LifetimeCap is the platform's cap on expireAfter + tGP, 0 when none:
	// EKSAutoModeLifetime for a pool on an EKS Auto Mode NodeClass.
	LifetimeCap time.Duration
	// Budget bounds the rotations at once by the NodePool's disruption
	// budgets over the cycle's occurrences, as the forecast reads them;
	// nil when none bounds them (docs/design.md#budget-forecast).
	Budget *BudgetLimit
	Timing
}

// Derivation is every figure of docs/design.md#age-threshold for one pool.
type Derivation struct {
	Cycle Cycle
	// NoDeadline: expireAfter is Never, so no claim ever becomes a candidate
	// by age and the age figures (Lead, A, G) are zero.
	NoDeadline bool
	TGPUnset   bool
	TGP        time.Duration // effective (fallback when unset)
	TRot       time.Duration // readyTimeout + prePull.timeout + tGP + buffer
	TRotEst    time.Duration // provisioningEstimate + prePull.timeout + drainEstimate
	// StartHold: no start in the last StartHold of an occurrence, at the
	// configured t_rot_est (the gate itself uses the learned forecast).
	StartHold time.Duration
	Lead      time.Duration // K·P + t_rot
	A         time.Duration // age threshold, derived or overridden
	Derived   bool          // A was derived (ageThreshold: auto)
	G         int           // chances the schedule guarantees
	C         int           // starts per occurrence
	// The resolved defaults, for display and the controller.
	FailurePause         time.Duration
	DrainEstimate        time.Duration
	ProvisioningEstimate time.Duration
}

// Derive computes the figures of in over the cycle cy.
func Derive(in Inputs, cy Cycle) Derivation {
	d := Derivation{Cycle: cy, NoDeadline: in.ExpireAfter == nil, TGP: TGPFallback, TGPUnset: in.TerminationGrace == nil}
	if in.TerminationGrace != nil {
		d.TGP = *in.TerminationGrace
	}
	d.FailurePause = orDefault(in.FailurePause, max(10*time.Minute, in.CooldownAfter))
	d.ProvisioningEstimate = orDefault(in.ProvisioningEstimate, min(in.ReadyTimeout, 5*time.Minute))
	d.DrainEstimate = orDefault(in.DrainEstimate, min(d.TGP, 10*time.Minute))
	d.TRot = in.ReadyTimeout + in.PrePullTimeout + d.TGP + Buffer
	d.TRotEst = d.ProvisioningEstimate + in.PrePullTimeout + d.DrainEstimate
	if !cy.AlwaysOpen {
		d.StartHold = in.StartHold(d.TRotEst)
	}
	if cy.HasOccurrence {
		m := max(in.MaxUnavailable, 1)
		service := max(d.TRotEst+in.CooldownAfter, Tick)
		starts := cy.D // the span a start may fall in
		if d.StartHold < cy.D {
			starts -= d.StartHold // a hold as long as the occurrence holds nothing
		}
		d.C = m * int((starts+service-1)/service)
	}
	if d.NoDeadline {
		return d
	}
	e := *in.ExpireAfter
	// Without an occurrence P is 0: the lead time is t_rot alone and no
	// chance is guaranteed (G = 0); the fatal NoWindows finding blocks starts.
	d.Lead = time.Duration(in.MinRotationChances)*cy.P + d.TRot
	d.Derived = in.AgeThreshold == nil
	if d.Derived {
		d.A = e - d.Lead
	} else {
		d.A = *in.AgeThreshold
	}
	d.G = chances(e-d.A-d.TRot, cy.P)
	return d
}

// chances is floor(span / p), never below zero.
func chances(span, p time.Duration) int {
	if span < 0 || p <= 0 {
		return 0
	}
	return int(span / p)
}

func orDefault(p *time.Duration, def time.Duration) time.Duration {
	if p != nil {
		return *p
	}
	return def
}

// ShortLead reports whether a claim whose own expireAfter is e can no longer
// be guaranteed K chances: e ≤ K·P + t_rot (layer 3).
func (d Derivation) ShortLead(e time.Duration) bool {
	return !d.NoDeadline && d.Cycle.HasOccurrence && e <= d.Lead
}
