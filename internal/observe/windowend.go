package observe

import (
	"slices"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/census"
)

// LearnedAfter is how many recorded rotations the forecast needs before it
// trusts them over the policy's estimates (docs/design.md#window-end).
const LearnedAfter = 3

// WindowEnd is what the window-end gate judged (docs/design.md#window-end).
type WindowEnd struct {
	// Forecast is the rotation time a start is judged by: the longest of
	// the pool's recent rotations once LearnedAfter are recorded, else
	// t_rot_est (provisioningEstimate + drainEstimate, + prePull.timeout
	// when prePull is on).
	Forecast time.Duration
	Learned  bool
	// Hold is how long before the close no start is made: the forecast
	// less surge.startCutoff, 0 when the cutoff is unset.
	Hold time.Duration
	// Close is the current occurrence's close; Left the time until it.
	// Zero outside an occurrence and in one open around the clock.
	Close time.Time
	Left  time.Duration
	// Ending: too little of the occurrence is left to start (Left ≤
	// Hold), in an occurrence longer than the hold, and the candidate's
	// deadline leaves it the next occurrence.
	Ending bool
	// Urgent: the hold would apply, but the candidate's deadline comes
	// before the next occurrence could rotate it: it starts now.
	Urgent bool
}

// windowEnd judges whether the open occurrence has room to start a
// rotation; it reads the census's candidate, so it runs after it. The learned forecast takes the longest recent rotation, not
// the median: a start it lets through should fit, and a slow outlier
// leaves the record after RecentRotationsKept more rotations. A hold as
// long as the occurrence holds nothing, so an outlier longer than the
// windows can never stop a pool from rotating.
func windowEnd(obs *Observation) WindowEnd {
	s := obs.Settings
	w := WindowEnd{Forecast: obs.Derivation.TRotEst}
	raw := obs.Pool.Annotations[v1alpha1.AnnotationRecentRotations]
	recent, err := v1alpha1.ParseRecentRotations(raw)
	if err != nil {
		obs.BadAnnotations = append(obs.BadAnnotations, census.BadAnnotation{
			Object: "NodePool/" + obs.Pool.Name, Key: v1alpha1.AnnotationRecentRotations, Value: raw,
			Problem: "not a list of positive Go durations (" + err.Error() + ")", Effect: "the forecast falls back to the policy's estimates"})
	}
	if len(recent) >= LearnedAfter {
		w.Forecast, w.Learned = slices.Max(recent), true
	}
	w.Hold = s.StartHold(w.Forecast)
	if !obs.WindowOpen || obs.Derivation.Cycle.AlwaysOpen {
		return w
	}
	o, open := s.Calendar.OccurrenceAt(obs.Now)
	if close, ok := s.Calendar.NextClose(obs.Now); ok && open {
		w.Close, w.Left = close, close.Sub(obs.Now)
		// a hold as long as the occurrence would hold all of it: no moment
		// of it is better than another, so it holds nothing
		w.Ending = w.Left <= w.Hold && w.Hold < close.Sub(o.Start)
	}
	if w.Ending && urgent(obs, w) {
		w.Ending, w.Urgent = false, true
	}
	return w
}

// urgent: waiting for the next occurrence would leave the candidate to
// Karpenter's expiry — its deadline comes before the next moment a start
// is allowed (an opening, or the end of a blackout over it) plus the
// forecast — so overrunning this one is the better outcome.
func urgent(obs *Observation, w WindowEnd) bool {
	c := obs.Candidate()
	if c == nil || c.Deadline.IsZero() {
		return false
	}
	// only a start by deadline − forecast counts, however long a blackout
	// after the close lasts
	by := c.Deadline.Add(-w.Forecast)
	next, ok := obs.Settings.Calendar.NextUsable(w.Close, by.Add(time.Nanosecond), obs.Settings.Timing)
	return !ok || by.Before(next)
}
