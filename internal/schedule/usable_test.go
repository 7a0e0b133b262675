package schedule

import (
	"testing"
	"time"
)

var allDays = []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

// Stretches are the occurrences less the blackouts, clipped to the range:
// touching and overlapping blackouts are crossed in turn, one over a whole
// occurrence leaves nothing of it, one nested in another changes nothing.
func TestStretches(t *testing.T) {
	day := func(d, h int) time.Time { return time.Date(2026, 11, 30+d, h, 0, 0, 0, time.UTC) }
	nightly := NewCalendar(mustEntry(t, "UTC", allDays, "02:00", "06:00"))
	iv := func(a, b time.Time) Interval { return Interval{Start: a, End: b} }
	cases := []struct {
		name      string
		cal       Calendar
		blackouts []Interval
		from, to  time.Time
		want      []Interval
	}{
		{"no blackout", nightly, nil, day(0, 0), day(2, 0), []Interval{iv(day(0, 2), day(0, 6)), iv(day(1, 2), day(1, 6))}},
		{"clipped to the range", nightly, nil, day(0, 3), day(1, 4), []Interval{iv(day(0, 3), day(0, 6)), iv(day(1, 2), day(1, 4))}},
		{"a blackout cuts one", nightly, []Interval{iv(day(0, 3), day(0, 4))}, day(0, 0), day(1, 0), []Interval{iv(day(0, 2), day(0, 3)), iv(day(0, 4), day(0, 6))}},
		{"touching blackouts are crossed in turn", nightly, []Interval{iv(day(0, 2), day(0, 3)), iv(day(0, 3), day(0, 5))}, day(0, 0), day(1, 0), []Interval{iv(day(0, 5), day(0, 6))}},
		{"nested and overlapping", nightly, []Interval{iv(day(0, 1), day(0, 4)), iv(day(0, 2), day(0, 3)), iv(day(0, 3), day(0, 5))}, day(0, 0), day(1, 0), []Interval{iv(day(0, 5), day(0, 6))}},
		{"a whole occurrence blacked out", nightly, []Interval{iv(day(0, 0), day(1, 0))}, day(0, 0), day(2, 0), []Interval{iv(day(1, 2), day(1, 6))}},
		{"open around the clock: the range less the blackouts", NewCalendar(mustEntry(t, "UTC", allDays, "00:00", "24:00")), []Interval{iv(day(1, 0), day(2, 0))}, day(0, 12), day(3, 0), []Interval{iv(day(0, 12), day(1, 0)), iv(day(2, 0), day(3, 0))}},
		{"an empty range", nightly, nil, day(1, 0), day(0, 0), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.cal.Stretches(c.from, c.to, Timing{Blackouts: c.blackouts})
			if len(got) != len(c.want) {
				t.Fatalf("stretches %v, want %v", got, c.want)
			}
			for i := range got {
				if !got[i].Start.Equal(c.want[i].Start) || !got[i].End.Equal(c.want[i].End) {
					t.Errorf("stretch %d: %s – %s, want %s – %s", i, got[i].Start, got[i].End, c.want[i].Start, c.want[i].End)
				}
			}
		})
	}
}

// LastStretch takes the last stretch beginning by its bound; NextUsable the
// first instant of its range, none when blackouts cover it.
func TestLastStretchAndNextUsable(t *testing.T) {
	day := func(d, h int) time.Time { return time.Date(2026, 11, 30+d, h, 0, 0, 0, time.UTC) }
	nightly := NewCalendar(mustEntry(t, "UTC", allDays, "02:00", "06:00"))
	tm := Timing{Blackouts: []Interval{{Start: day(1, 0), End: day(2, 0)}}}
	if s, ok := nightly.LastStretch(day(0, 0), day(2, 3), tm); !ok || !s.Start.Equal(day(2, 2)) || !s.End.Equal(day(2, 3)) {
		t.Errorf("last stretch by Wed 03:00 %v %v, want Wed 02:00 – 03:00", s, ok)
	}
	if s, ok := nightly.LastStretch(day(0, 0), day(1, 23), tm); !ok || !s.Start.Equal(day(0, 2)) {
		t.Errorf("last stretch by Tue 23:00 %v %v, want Monday's: Tuesday's is blacked out", s, ok)
	}
	if at, ok := nightly.NextUsable(day(0, 7), day(3, 0), tm); !ok || !at.Equal(day(2, 2)) {
		t.Errorf("next usable after Mon 07:00 %s %v, want Wed 02:00", at, ok)
	}
	if _, ok := nightly.NextUsable(day(0, 7), day(2, 0), tm); ok {
		t.Error("next usable before Wed 00:00: Tuesday's window is blacked out, want none")
	}
}
