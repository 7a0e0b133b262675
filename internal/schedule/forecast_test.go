package schedule

import (
	"testing"
	"time"
)

func TestForecastRotations(t *testing.T) {
	// Tuesdays and Thursdays 02:00–04:00 UTC; 2026-12-01 is a Tuesday
	e, err := ParseEntry("UTC", []string{"Tue", "Thu"}, "02:00", "04:00")
	if err != nil {
		t.Fatal(err)
	}
	cal := NewCalendar(e)
	tm := func(day, h, m int) time.Time { return time.Date(2026, 12, day, h, m, 0, 0, time.UTC) }
	timing := Timing{CooldownAfter: 10 * time.Minute, MaxUnavailable: 1}
	est := 20 * time.Minute // a start every 30 min: 4 per occurrence

	cases := []struct {
		name        string
		from        time.Time
		n           int
		starts      []time.Time
		done        time.Time
		occurrences int
	}{
		{"inside an open window", tm(1, 2, 45), 2, []time.Time{tm(1, 2, 45), tm(1, 3, 15)}, tm(1, 3, 35), 1},
		{"the last start fits before the close", tm(1, 3, 31), 2, []time.Time{tm(1, 3, 31), tm(3, 2, 0)}, tm(3, 2, 20), 2},
		{"closed: from the next opening", tm(1, 5, 0), 5, []time.Time{tm(3, 2, 0), tm(3, 2, 30), tm(3, 3, 0), tm(3, 3, 30), tm(8, 2, 0)}, tm(8, 2, 20), 2},
		{"nothing to do", tm(1, 5, 0), 0, nil, time.Time{}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := cal.ForecastRotations(c.from, c.n, timing, est)
			if len(f.Starts) != len(c.starts) {
				t.Fatalf("starts = %v, want %v", f.Starts, c.starts)
			}
			for i := range c.starts {
				if !f.Starts[i].Equal(c.starts[i]) {
					t.Errorf("start %d = %v, want %v", i, f.Starts[i], c.starts[i])
				}
			}
			if !f.Done.Equal(c.done) || f.Occurrences != c.occurrences || f.Beyond {
				t.Errorf("done %v in %d occurrences (beyond %v), want %v in %d", f.Done, f.Occurrences, f.Beyond, c.done, c.occurrences)
			}
		})
	}

	t.Run("always open: one long occurrence", func(t *testing.T) {
		all, err := ParseEntry("UTC", []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}, "00:00", "24:00")
		if err != nil {
			t.Fatal(err)
		}
		// 10,000 rotations every 30 min span 208 days of two-week scans
		f := NewCalendar(all).ForecastRotations(tm(1, 0, 0), 10000, timing, est)
		if f.Beyond || f.Occurrences != 1 || !f.Done.Equal(tm(1, 0, 0).Add(9999*30*time.Minute+est)) {
			t.Errorf("done %v in %d occurrences, beyond %v", f.Done, f.Occurrences, f.Beyond)
		}
		// and across the DST changes of a zone
		berlin, err := ParseEntry("Europe/Berlin", []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}, "00:00", "24:00")
		if err != nil {
			t.Fatal(err)
		}
		if f := NewCalendar(berlin).ForecastRotations(tm(1, 0, 0), 10000, timing, est); f.Beyond || f.Occurrences != 1 {
			t.Errorf("Berlin 24/7: %d occurrences, beyond %v", f.Occurrences, f.Beyond)
		}
	})
	t.Run("no windows: beyond the horizon", func(t *testing.T) {
		if f := NewCalendar().ForecastRotations(tm(1, 0, 0), 1, timing, est); !f.Beyond || !f.Done.IsZero() {
			t.Errorf("forecast %+v", f)
		}
	})
}

func TestForecastCountsEachOccurrenceOnce(t *testing.T) {
	morning, err := ParseEntry("UTC", []string{"Tue"}, "02:00", "03:00")
	if err != nil {
		t.Fatal(err)
	}
	afternoon, err := ParseEntry("UTC", []string{"Tue"}, "14:00", "15:00")
	if err != nil {
		t.Fatal(err)
	}
	// 22:00–02:00 across midnight, every day: one occurrence each night
	nightly, err := ParseEntry("UTC", []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}, "22:00", "02:00")
	if err != nil {
		t.Fatal(err)
	}
	timing := Timing{CooldownAfter: 10 * time.Minute, MaxUnavailable: 1}
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) // a Tuesday
	// 30 min a rotation: 2 in each one-hour window, so 4 take both of the
	// day's windows
	if f := NewCalendar(morning, afternoon).ForecastRotations(from, 4, timing, 20*time.Minute); f.Occurrences != 2 || !f.Start(3).Equal(time.Date(2026, 12, 1, 14, 30, 0, 0, time.UTC)) {
		t.Errorf("two windows a day: %d occurrences, starts %v", f.Occurrences, f.Starts)
	}
	// 8 a night: 400 rotations take 50 nights, each counted once though
	// every two-week scan returns the night it cuts whole
	if f := NewCalendar(nightly).ForecastRotations(from.Add(12*time.Hour), 400, timing, 20*time.Minute); f.Occurrences != 50 || f.Beyond {
		t.Errorf("nightly: %d occurrences for 400 rotations, want 50", f.Occurrences)
	}
}
