package schedule

import (
	"slices"
	"time"
)

// ForecastHorizon bounds how far a forecast looks: work that would not be
// done within a year of its start is reported as beyond it.
const ForecastHorizon = 365 * 24 * time.Hour

// Forecast is when a pool's outstanding rotations would be done if each
// took the estimate t_rot_est and started as soon as the windows and the
// cooldown allow — the same service model as the capacity C
// (docs/design.md#schedule-figures), played forward on the real calendar.
type Forecast struct {
	Rotations int `json:"rotations"`
	// Starts are the forecast start of each rotation, in order.
	Starts []time.Time `json:"starts,omitempty"`
	// Done is when the last rotation ends; zero when there is none or the
	// work does not fit within the horizon (Beyond).
	Done        time.Time `json:"done,omitzero"`
	Occurrences int       `json:"occurrences"` // window occurrences the starts fall in
	Beyond      bool      `json:"beyond,omitempty"`
}

// ForecastRotations places n rotations on the calendar from `from` on: a
// start every max(t_rot_est + cooldownAfter, Tick) inside an open
// occurrence but its last StartHold, maxUnavailable at a time, as the
// capacity C assumes.
func (c Calendar) ForecastRotations(from time.Time, n int, t Timing, tRotEst time.Duration) Forecast {
	free := make([]time.Time, max(t.MaxUnavailable, 1))
	for i := range free {
		free[i] = from
	}
	return c.ForecastSlots(free, n, t, tRotEst)
}

// ForecastSlots places n rotations on rotation slots that are free from
// the given instants on (docs/design.md#throughput): each start takes the
// slot free soonest, at the first instant from then on inside an open
// occurrence but its last StartHold and out of the blackouts, and holds it
// for max(t_rot_est + cooldownAfter, Tick). Slots all free at one instant
// start together, maxUnavailable at a time; a slot whose rotation is in
// flight is free once its estimate has run out.
func (c Calendar) ForecastSlots(free []time.Time, n int, t Timing, tRotEst time.Duration) Forecast {
	f := Forecast{Rotations: n}
	if n <= 0 || len(free) == 0 {
		return f
	}
	slots := append([]time.Time(nil), free...)
	service := max(tRotEst+t.CooldownAfter, Tick)
	hold := t.StartHold(tRotEst)
	horizon := slices.MinFunc(slots, time.Time.Compare).Add(ForecastHorizon)
	var lastEnd time.Time // the end of the last occurrence a start fell in
	for len(f.Starts) < n {
		i := slices.IndexFunc(slots, slices.MinFunc(slots, time.Time.Compare).Equal)
		at, o, ok := c.startFrom(slots[i], hold, t, horizon)
		if !ok {
			f.Beyond = true
			return f
		}
		f.Starts = append(f.Starts, at)
		slots[i] = at.Add(service)
		if lastEnd.IsZero() || o.Start.After(lastEnd) {
			f.Occurrences++
		}
		lastEnd = later(lastEnd, o.End)
	}
	f.Done = f.Starts[len(f.Starts)-1].Add(tRotEst)
	return f
}

// startFrom is the first instant from `from` on that a rotation may start,
// before horizon, and the occurrence it falls in.
func (c Calendar) startFrom(from time.Time, hold time.Duration, t Timing, horizon time.Time) (time.Time, Interval, bool) {
	for scan := from; scan.Before(horizon); scan = scan.Add(2 * week) {
		// an occurrence reaching past the scan comes back whole in the
		// next one too; one open around the clock comes back clipped to
		// each scan, its pieces touching
		for _, o := range c.Occurrences(scan, scan.Add(2*week)) {
			last := o.End // starts fall before the close less the start hold
			if o.Duration() < week && hold < o.Duration() {
				last = o.End.Add(-hold) // a hold as long as the occurrence holds nothing
			}
			if at := t.AfterBlackouts(later(o.Start, from)); at.Before(last) {
				return at, o, true
			}
		}
	}
	return time.Time{}, Interval{}, false
}

// Start is the forecast start of rotation i (from 0), zero when it does not
// fit within the horizon or there is no forecast (f nil).
func (f *Forecast) Start(i int) time.Time {
	if f == nil || i < 0 || i >= len(f.Starts) {
		return time.Time{}
	}
	return f.Starts[i]
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
