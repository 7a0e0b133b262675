package schedule

import "time"

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
	f := Forecast{Rotations: n}
	if n <= 0 {
		return f
	}
	service := max(tRotEst+t.CooldownAfter, Tick)
	m := max(t.MaxUnavailable, 1)
	hold := t.StartHold(tRotEst)
	horizon := from.Add(ForecastHorizon)
	next := from          // the earliest the next start may be
	var lastEnd time.Time // the end of the last occurrence a start fell in
	for scan := from; scan.Before(horizon) && len(f.Starts) < n; scan = scan.Add(2 * week) {
		// an occurrence reaching past the scan comes back whole in the
		// next one too (next skips what was used of it); one open around
		// the clock comes back clipped to each scan, its pieces touching
		for _, o := range c.Occurrences(scan, scan.Add(2*week)) {
			last := o.End // starts fall before the close less the start hold
			if o.Duration() < week && hold < o.Duration() {
				last = o.End.Add(-hold) // a hold as long as the occurrence holds nothing
			}
			for at := t.AfterBlackouts(later(o.Start, next)); at.Before(last) && len(f.Starts) < n; at = t.AfterBlackouts(at.Add(service)) {
				for range min(m, n-len(f.Starts)) {
					f.Starts = append(f.Starts, at)
				}
				next = at.Add(service)
				if lastEnd.IsZero() || o.Start.After(lastEnd) {
					f.Occurrences++
				}
				lastEnd = later(lastEnd, o.End)
			}
		}
	}
	if len(f.Starts) < n {
		f.Beyond = true
		return f
	}
	f.Done = f.Starts[len(f.Starts)-1].Add(tRotEst)
	return f
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
