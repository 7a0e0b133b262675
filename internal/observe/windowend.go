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
	// t_rot_est (provisioningEstimate + drainEstimate).
	Forecast time.Duration
	Learned  bool
	// Hold is how long before the close no start is made: the forecast
	// less surge.startCutoff, 0 when the cutoff is unset.
	Hold time.Duration
	// Close is the current occurrence's close; Left the time until it.
	// Zero outside an occurrence and in one open around the clock.
	Close time.Time
	Left  time.Duration
	// Ending: too little of the occurrence is left to start (Left < Hold).
	Ending bool
}

// windowEnd judges whether the open occurrence has room to start a
// rotation. The learned forecast takes the longest recent rotation, not
// the median: a start it lets through must fit, and a slow outlier leaves
// the record after RecentRotationsKept more rotations.
func windowEnd(obs *Observation) WindowEnd {
	s := obs.Settings
	w := WindowEnd{Forecast: obs.Derivation.TRotEst}
	raw := obs.Pool.Annotations[v1alpha1.AnnotationRecentRotations]
	recent, err := v1alpha1.ParseRecentRotations(raw)
	if err != nil {
		obs.BadAnnotations = append(obs.BadAnnotations, census.BadAnnotation{
			Object: "NodePool/" + obs.Pool.Name, Key: v1alpha1.AnnotationRecentRotations, Value: raw,
			Problem: "not a list of positive Go durations (" + err.Error() + "); the forecast falls back to the policy's estimates"})
	}
	if len(recent) >= LearnedAfter {
		w.Forecast, w.Learned = slices.Max(recent), true
	}
	w.Hold = s.StartHold(w.Forecast)
	if !obs.WindowOpen || obs.Derivation.Cycle.AlwaysOpen {
		return w
	}
	if close, ok := s.Calendar.NextClose(obs.Now); ok {
		w.Close, w.Left = close, close.Sub(obs.Now)
		w.Ending = w.Left < w.Hold
	}
	return w
}
