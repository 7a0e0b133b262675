package schedule

import (
	"strings"
	"testing"
	"time"
)

func FuzzParseEntry(f *testing.F) {
	f.Add("UTC", "Mon,Sat", "02:00", "06:00")
	f.Add("Asia/Tokyo", "Sun", "22:00", "24:00")
	f.Add("Europe/Berlin", "Mon", "23:59", "00:00")
	f.Add("", "Xyz", "25:00", "1:2")
	f.Fuzz(func(t *testing.T, tz, days, start, end string) {
		e, err := ParseEntry(tz, strings.Split(days, ","), start, end)
		if err != nil {
			return
		}
		if e.Start < 0 || e.Start >= minutesPerDay || e.End <= e.Start || e.End > e.Start+minutesPerDay {
			t.Fatalf("parsed %q-%q into start %d end %d", start, end, e.Start, e.End)
		}
	})
}

var fuzzZones = []string{"UTC", "Asia/Tokyo", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kathmandu"}

// FuzzUnion builds up to three entries from raw bytes and checks the union's
// invariants: P > 0 exactly when an occurrence exists, and is-open agrees
// with next-open and next-close.
func FuzzUnion(f *testing.F) {
	f.Add([]byte{0x12, 0, 120, 1, 104, 0x40, 1, 0, 0, 0}, int64(0))
	f.Add([]byte{0x7f, 0, 0, 5, 160}, int64(86400*3))
	f.Add([]byte{0x01, 2, 200, 2, 200, 0x02, 3, 10, 3, 20}, int64(-3600))
	f.Fuzz(func(t *testing.T, raw []byte, offsetSeconds int64) {
		var entries []Entry
		anyDay := false
		for i := 0; i+5 <= len(raw) && len(entries) < 3; i += 5 {
			var e Entry
			for d := 0; d < 7; d++ {
				e.Days[d] = raw[i]&(1<<d) != 0
				anyDay = anyDay || e.Days[d]
			}
			loc, err := time.LoadLocation(fuzzZones[int(raw[i+1])%len(fuzzZones)])
			if err != nil {
				t.Fatalf("loading %s from the embedded zone database: %v", fuzzZones[int(raw[i+1])%len(fuzzZones)], err)
			}
			e.Location = loc
			e.Start = (int(raw[i+2]) * 6) % minutesPerDay
			e.End = (int(raw[i+3])*6 + int(raw[i+4])) % (minutesPerDay + 1)
			if e.End <= e.Start {
				e.End += minutesPerDay
			}
			entries = append(entries, e)
		}
		cal := NewCalendar(entries...)
		base := time.Date(2026, 3, 25, 0, 0, 0, 0, time.UTC)
		now := base.Add(time.Duration(offsetSeconds%(400*86400)) * time.Second)
		cy := cal.Measure(now)
		if cy.HasOccurrence != anyDay || (cy.P > 0) != anyDay {
			t.Fatalf("any day %v but cycle %+v", anyDay, cy)
		}
		if !anyDay {
			return
		}
		open := cal.IsOpen(now)
		if next, ok := cal.NextOpen(now); ok {
			if !next.After(now) || !cal.IsOpen(next) || cal.IsOpen(next.Add(-time.Nanosecond)) {
				t.Fatalf("next open %s after %s disagrees with is-open", next, now)
			}
		} else if !cy.AlwaysOpen {
			t.Fatalf("no next open within the lookahead of %s for a union that closes", now)
		}
		if close, ok := cal.NextClose(now); ok {
			if !close.After(now) || cal.IsOpen(close) || !cal.IsOpen(close.Add(-time.Nanosecond)) {
				t.Fatalf("next close %s after %s disagrees with is-open", close, now)
			}
			// An occurrence a week long or more is clipped to its scan
			// (Occurrences: the union is open around the clock, and what
			// reads an occurrence's end skips such a union), so only a
			// shorter one must end at the next close.
			if o, _ := cal.OccurrenceAt(now); open && o.Duration() < week && !o.End.Equal(close) {
				t.Fatalf("open at %s in %v but next close is %s", now, o, close)
			}
		} else if !cy.AlwaysOpen {
			t.Fatalf("no next close within the lookahead of %s for a union that closes", now)
		}
	})
}
