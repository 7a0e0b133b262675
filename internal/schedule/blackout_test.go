package schedule

import (
	"testing"
	"time"
)

// AfterBlackouts crosses touching and overlapping blackouts; the forecast
// places no start inside one (docs/design.md#manual-controls).
func TestBlackouts(t *testing.T) {
	tm := func(day, h int) time.Time { return time.Date(2026, 12, day, h, 0, 0, 0, time.UTC) }
	tim := Timing{CooldownAfter: 10 * time.Minute, MaxUnavailable: 1, Blackouts: []Interval{
		{Start: tm(24, 0), End: tm(26, 0)}, {Start: tm(26, 0), End: tm(27, 0)}, {Start: tm(26, 12), End: tm(28, 0)},
	}}
	for _, c := range []struct{ at, want time.Time }{
		{tm(23, 12), tm(23, 12)}, {tm(24, 0), tm(28, 0)}, {tm(25, 6), tm(28, 0)}, {tm(28, 0), tm(28, 0)},
	} {
		if got := tim.AfterBlackouts(c.at); !got.Equal(c.want) {
			t.Errorf("after %s: %s, want %s", c.at, got, c.want)
		}
	}
	if _, in := tim.BlackoutAt(tm(24, 0)); !in {
		t.Error("a blackout holds its start")
	}
	if _, in := tim.BlackoutAt(tm(28, 0)); in {
		t.Error("a blackout does not hold its end")
	}
	e, err := ParseEntry("UTC", []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}, "00:00", "24:00")
	if err != nil {
		t.Fatal(err)
	}
	f := NewCalendar(e).ForecastRotations(tm(23, 23), 3, tim, 20*time.Minute)
	want := []time.Time{tm(23, 23), tm(23, 23).Add(30 * time.Minute), tm(28, 0)}
	for i := range want {
		if i >= len(f.Starts) || !f.Starts[i].Equal(want[i]) {
			t.Fatalf("starts %v, want %v", f.Starts, want)
		}
	}
}
