package schedule

import "time"

// Stretches are the parts of [from, to) in which a rotation may start, in
// order: inside an open occurrence and outside every blackout
// (docs/design.md#manual-controls). A calendar open around the clock is
// one occurrence, clipped to the range like every other.
func (c Calendar) Stretches(from, to time.Time, t Timing) []Interval {
	var out []Interval
	if !from.Before(to) {
		return nil
	}
	for _, o := range c.Occurrences(from, to) {
		start, end := later(o.Start, from), earlier(o.End, to)
		for at := t.AfterBlackouts(start); at.Before(end); at = t.AfterBlackouts(at) {
			stop := end
			for _, b := range t.Blackouts {
				if b.Start.After(at) && b.Start.Before(stop) {
					stop = b.Start
				}
			}
			out = append(out, Interval{Start: at, End: stop, Location: o.Location})
			at = stop
		}
	}
	return out
}

// LastStretch is the last stretch of [from, by] in which a rotation may
// start; ok is false when the windows and blackouts leave none.
func (c Calendar) LastStretch(from, by time.Time, t Timing) (Interval, bool) {
	s := c.Stretches(from, by.Add(time.Nanosecond), t)
	if len(s) == 0 {
		return Interval{}, false
	}
	last := s[len(s)-1]
	last.End = earlier(last.End, by)
	return last, true
}

// NextUsable is the first instant of [from, to) in which a rotation may
// start; ok is false when the windows and blackouts leave none in it.
func (c Calendar) NextUsable(from, to time.Time, t Timing) (time.Time, bool) {
	s := c.Stretches(from, to, t)
	if len(s) == 0 {
		return time.Time{}, false
	}
	return s[0].Start, true
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
