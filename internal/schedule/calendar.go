package schedule

import (
	"sort"
	"time"
)

// week is the cycle every window pattern repeats over.
const week = 7 * 24 * time.Hour

// Interval is one occurrence [Start, End) of the union. Location is the time
// zone of the entry whose piece opened it, for display in local time.
type Interval struct {
	Start, End time.Time
	Location   *time.Location
}

// Duration is End − Start.
func (i Interval) Duration() time.Duration { return i.End.Sub(i.Start) }

// Contains reports Start ≤ t < End.
func (i Interval) Contains(t time.Time) bool { return !t.Before(i.Start) && t.Before(i.End) }

// Calendar is the union of a policy's window entries on the real calendar:
// pieces that overlap or touch (across midnight or across entries) merge into
// one occurrence, so two entries 22:00–24:00 and 00:00–02:00 are one window.
type Calendar struct {
	entries []Entry
	// closed are stretches cut out of every occurrence: the NodePool
	// budgets' zero allowances, as the forecast reads them (Without).
	closed []Interval
}

// Without is the calendar with the closed intervals cut out of its
// occurrences: the windows as a pool whose NodePool budgets allow no
// disruption in those stretches can use them
// (docs/design.md#budget-forecast).
func (c Calendar) Without(closed []Interval) Calendar {
	all := append(append([]Interval(nil), c.closed...), closed...)
	sort.Slice(all, func(i, j int) bool { return all[i].Start.Before(all[j].Start) })
	c.closed = nil
	for _, h := range all {
		if n := len(c.closed); n > 0 && !h.Start.After(c.closed[n-1].End) {
			if h.End.After(c.closed[n-1].End) {
				c.closed[n-1].End = h.End
			}
			continue
		}
		c.closed = append(c.closed, h)
	}
	return c
}

// NewCalendar builds the union of entries.
func NewCalendar(entries ...Entry) Calendar { return Calendar{entries: entries} }

// Empty reports whether no entry opens on any day.
func (c Calendar) Empty() bool {
	for _, e := range c.entries {
		for _, d := range e.Days {
			if d {
				return false
			}
		}
	}
	return true
}

// Occurrences returns the merged occurrences overlapping [from, to), in
// order. An occurrence that reaches past either bound is returned whole
// (computed on a wider scan), unless it spans a full week: then the union is
// open around the clock and that occurrence is clipped to the scan.
func (c Calendar) Occurrences(from, to time.Time) []Interval {
	scanFrom, scanTo := from.Add(-week-48*time.Hour), to.Add(week+48*time.Hour)
	var pieces []Interval
	for _, e := range c.entries {
		pieces = append(pieces, e.pieces(scanFrom, scanTo)...)
	}
	sort.Slice(pieces, func(i, j int) bool { return pieces[i].Start.Before(pieces[j].Start) })
	var merged []Interval
	for _, p := range pieces {
		if n := len(merged); n > 0 && !p.Start.After(merged[n-1].End) {
			if p.End.After(merged[n-1].End) {
				merged[n-1].End = p.End
			}
			continue
		}
		merged = append(merged, p)
	}
	var out []Interval
	for _, m := range cut(merged, c.closed) {
		if m.End.After(from) && m.Start.Before(to) {
			out = append(out, m)
		}
	}
	return out
}

// AlwaysOpen reports whether the union is open around the clock near t: an
// occurrence at least a week long within two weeks of t means the weekly
// pattern never closes, or closes only at a DST change. Such a union is
// treated as 24/7 for the cycle figures; is-open, next-open and next-close
// stay exact.
func (c Calendar) AlwaysOpen(t time.Time) bool {
	for _, o := range c.Occurrences(t, t.Add(2*week)) {
		if o.Duration() >= week {
			return true
		}
	}
	return false
}

// OccurrenceAt returns the occurrence containing t.
func (c Calendar) OccurrenceAt(t time.Time) (Interval, bool) {
	for _, o := range c.Occurrences(t, t.Add(time.Nanosecond)) {
		if o.Contains(t) {
			return o, true
		}
	}
	return Interval{}, false
}

// IsOpen reports whether a window is open at t.
func (c Calendar) IsOpen(t time.Time) bool {
	_, ok := c.OccurrenceAt(t)
	return ok
}

// lookahead bounds next-open and next-close: two weeks, so an occurrence
// swallowed by a DST gap cannot hide the one a week later.
const lookahead = 2*week + time.Minute

// NextOpen is the start of the first occurrence that opens after t. ok is
// false when none opens within the lookahead (no windows, or open 24/7).
func (c Calendar) NextOpen(t time.Time) (time.Time, bool) {
	for _, o := range c.Occurrences(t, t.Add(lookahead)) {
		if o.Start.After(t) {
			return o.Start, true
		}
	}
	return time.Time{}, false
}

// NextClose is the first instant after t at which an occurrence ends. ok is
// false when none closes within the lookahead (no windows, or open 24/7).
// The end of a merged occurrence that reaches the edge of the scan is an
// artefact of the scan, always beyond the lookahead, so it is not reported.
func (c Calendar) NextClose(t time.Time) (time.Time, bool) {
	horizon := t.Add(lookahead)
	for _, o := range c.Occurrences(t, horizon) {
		if o.End.After(t) && o.End.Before(horizon) {
			return o.End, true
		}
	}
	return time.Time{}, false
}

// cut removes the closed intervals (in order, disjoint: Without keeps
// them so) from each occurrence: what is left of one may be several
// pieces, each keeping the occurrence's time zone.
func cut(occ, closed []Interval) []Interval {
	if len(closed) == 0 {
		return occ
	}
	var out []Interval
	for _, o := range occ {
		// the first closed interval ending after the occurrence starts
		i := sort.Search(len(closed), func(i int) bool { return closed[i].End.After(o.Start) })
		start := o.Start
		for ; i < len(closed) && closed[i].Start.Before(o.End); i++ {
			if closed[i].Start.After(start) {
				out = append(out, Interval{Start: start, End: closed[i].Start, Location: o.Location})
			}
			if closed[i].End.After(start) {
				start = closed[i].End
			}
		}
		if start.Before(o.End) {
			out = append(out, Interval{Start: start, End: o.End, Location: o.Location})
		}
	}
	return out
}
