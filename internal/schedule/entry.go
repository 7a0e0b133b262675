package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	// The IANA zone database is compiled in: a distroless container has no
	// /usr/share/zoneinfo, and every window's time zone must load.
	_ "time/tzdata"
)

const minutesPerDay = 24 * 60

// Entry is one parsed maintenance window: on each of Days (by the local
// weekday of its start), from Start to End minutes after local midnight in
// Location. End > Start always holds after parsing: an entry whose end is not
// after its start crosses midnight, so End carries the extra day.
type Entry struct {
	Location *time.Location
	Days     [7]bool // indexed by time.Weekday
	Start    int     // minutes after local midnight, 0..1439
	End      int     // minutes after local midnight of the start day, Start < End ≤ Start+1440
}

var weekdays = map[string]time.Weekday{
	"Sun": time.Sunday, "Mon": time.Monday, "Tue": time.Tuesday, "Wed": time.Wednesday,
	"Thu": time.Thursday, "Fri": time.Friday, "Sat": time.Saturday,
}

// ParseEntry validates and parses one window. Its errors name the field.
func ParseEntry(timezone string, days []string, start, end string) (Entry, error) {
	var e Entry
	if timezone == "" {
		return e, fmt.Errorf("timezone: must not be empty")
	}
	loc, err := time.LoadLocation(timezone)
	if err != nil {
		return e, fmt.Errorf("timezone %q: not a loadable IANA time zone: %w", timezone, err)
	}
	e.Location = loc
	if len(days) == 0 {
		return e, fmt.Errorf("days: at least one of Mon..Sun is required")
	}
	for i, d := range days {
		wd, ok := weekdays[d]
		if !ok {
			return e, fmt.Errorf("days[%d] %q: not one of Mon, Tue, Wed, Thu, Fri, Sat, Sun", i, d)
		}
		if e.Days[wd] {
			return e, fmt.Errorf("days[%d] %q: listed twice", i, d)
		}
		e.Days[wd] = true
	}
	if e.Start, err = parseClock(start, false); err != nil {
		return e, fmt.Errorf("start %q: %w", start, err)
	}
	if e.End, err = parseClock(end, true); err != nil {
		return e, fmt.Errorf("end %q: %w", end, err)
	}
	if e.End <= e.Start {
		e.End += minutesPerDay // crosses midnight; start == end is a whole day
	}
	return e, nil
}

// parseClock reads "HH:MM" (and "24:00" when allowed) as minutes.
func parseClock(s string, allow24 bool) (int, error) {
	hh, mm, ok := strings.Cut(s, ":")
	if !ok || len(hh) != 2 || len(mm) != 2 {
		return 0, fmt.Errorf("want HH:MM")
	}
	h, err1 := strconv.Atoi(hh)
	m, err2 := strconv.Atoi(mm)
	if err1 != nil || err2 != nil || h < 0 || m < 0 || m > 59 {
		return 0, fmt.Errorf("want HH:MM")
	}
	if h == 24 && m == 0 && allow24 {
		return minutesPerDay, nil
	}
	if h > 23 {
		if allow24 {
			return 0, fmt.Errorf("hour must be 00..23, or the time exactly 24:00")
		}
		return 0, fmt.Errorf("hour must be 00..23")
	}
	return h*60 + m, nil
}

// piece is one concrete occurrence of one entry on the real calendar. A
// piece whose whole local span is skipped by a DST gap is empty (ok false).
func (e Entry) piece(y int, m time.Month, d int) (Interval, bool) {
	iv := Interval{
		Start:    wallTime(y, m, d, e.Start, e.Location),
		End:      wallTime(y, m, d, e.End, e.Location),
		Location: e.Location,
	}
	return iv, iv.End.After(iv.Start)
}

// wallTime is the instant the local wall clock shows day y-m-d plus minutes
// in loc. A wall time skipped by a DST gap maps to the transition instant —
// the moment the clock passes it — not to time.Date's shifted reading.
// time.Date normalises a skipped reading forward (east of UTC: Berlin 02:30
// reads 03:30 CEST, already past the transition, which starts its zone
// period) or backward (west of UTC: New York 02:30 reads 01:30 EST, still
// before it, so the transition ends its zone period).
func wallTime(y int, m time.Month, d, minutes int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, 0, minutes, 0, 0, loc)
	want := time.Date(y, m, d, 0, minutes, 0, 0, time.UTC)
	shown := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), 0, 0, time.UTC)
	if shown.Equal(want) {
		return t
	}
	start, end := t.ZoneBounds()
	if shown.After(want) {
		return start
	}
	return end
}

// pieces lists the entry's occurrences whose local start day lies in
// [from−2d, to+1d], so every occurrence overlapping [from, to) is included.
func (e Entry) pieces(from, to time.Time) []Interval {
	var out []Interval
	first := from.In(e.Location).AddDate(0, 0, -2)
	last := to.In(e.Location).AddDate(0, 0, 1)
	y, m, d := first.Date()
	for day := time.Date(y, m, d, 12, 0, 0, 0, e.Location); !day.After(last); day = day.AddDate(0, 0, 1) {
		if e.Days[day.Weekday()] {
			if p, ok := e.piece(day.Date()); ok {
				out = append(out, p)
			}
		}
	}
	return out
}
