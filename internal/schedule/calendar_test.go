package schedule

import (
	"testing"
	"time"
)

func TestIntervalBounds(t *testing.T) {
	start := at(t, "UTC", "2026-11-30 02:00")
	iv := Interval{Start: start, End: start.Add(4 * time.Hour)}
	if iv.Duration() != 4*time.Hour {
		t.Errorf("duration = %s", iv.Duration())
	}
	for _, c := range []struct {
		off  time.Duration
		want bool
	}{{-time.Nanosecond, false}, {0, true}, {2 * time.Hour, true}, {4*time.Hour - time.Nanosecond, true}, {4 * time.Hour, false}} {
		if got := iv.Contains(start.Add(c.off)); got != c.want {
			t.Errorf("Contains(start%+v) = %v, want %v", c.off, got, c.want)
		}
	}
}

func TestEmptyCalendar(t *testing.T) {
	noDays := Entry{Location: time.UTC, Start: 60, End: 120}
	for name, cal := range map[string]Calendar{"no entries": NewCalendar(), "an entry without days": NewCalendar(noDays)} {
		now := at(t, "UTC", "2026-11-30 12:00")
		if !cal.Empty() {
			t.Errorf("%s: not empty", name)
		}
		if occ := cal.Occurrences(now, now.Add(3*week)); len(occ) != 0 {
			t.Errorf("%s: occurrences %+v", name, occ)
		}
		if _, ok := cal.NextOpen(now); ok {
			t.Errorf("%s: has a next open", name)
		}
		if _, ok := cal.NextClose(now); ok {
			t.Errorf("%s: has a next close", name)
		}
		if cal.IsOpen(now) || cal.AlwaysOpen(now) {
			t.Errorf("%s: open", name)
		}
	}
	if NewCalendar(noDays, mustEntry(t, "UTC", []string{"Sun"}, "01:00", "02:00")).Empty() {
		t.Error("one entry with a day makes the calendar non-empty")
	}
}

func TestOccurrencesAreReturnedWhole(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "UTC", []string{"Mon", "Thu"}, "02:00", "06:00"))
	cases := []struct {
		name, from, to string
		starts         []string
	}{
		{"a scan inside one occurrence", "2026-11-30 03:00", "2026-11-30 04:00", []string{"2026-11-30 02:00"}},
		{"ends exactly at from: excluded", "2026-11-30 06:00", "2026-11-30 07:00", nil},
		{"starts exactly at to: excluded", "2026-11-30 01:00", "2026-11-30 02:00", nil},
		{"one minute of overlap at the start", "2026-11-30 00:00", "2026-11-30 02:01", []string{"2026-11-30 02:00"}},
		{"three weeks", "2026-11-30 00:00", "2026-12-21 00:00", []string{
			"2026-11-30 02:00", "2026-12-03 02:00", "2026-12-07 02:00", "2026-12-10 02:00", "2026-12-14 02:00", "2026-12-17 02:00"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			from := at(t, "UTC", c.from)
			to := at(t, "UTC", c.to)
			occ := cal.Occurrences(from, to)
			if len(occ) != len(c.starts) {
				t.Fatalf("occurrences = %+v, want starts %v", occ, c.starts)
			}
			for i, s := range c.starts {
				if !occ[i].Start.Equal(at(t, "UTC", s)) || occ[i].Duration() != 4*time.Hour {
					t.Errorf("occurrence %d = %+v, want %s for 4h", i, occ[i], s)
				}
			}
		})
	}
}

func TestMergedOccurrenceKeepsTheOpeningZone(t *testing.T) {
	tokyo := mustEntry(t, "Asia/Tokyo", []string{"Wed"}, "02:00", "06:00") // Tue 17:00–21:00Z
	cases := []struct {
		name   string
		other  Entry
		start  string
		length time.Duration
		zone   string
	}{
		{"Tokyo opens first", mustEntry(t, "UTC", []string{"Tue"}, "20:00", "23:00"), "2026-12-01 17:00", 6 * time.Hour, "Asia/Tokyo"},
		{"UTC opens first", mustEntry(t, "UTC", []string{"Tue"}, "15:00", "18:00"), "2026-12-01 15:00", 6 * time.Hour, "UTC"},
		{"touching at 21:00Z", mustEntry(t, "UTC", []string{"Tue"}, "21:00", "22:00"), "2026-12-01 17:00", 5 * time.Hour, "Asia/Tokyo"},
		{"contained", mustEntry(t, "UTC", []string{"Tue"}, "18:00", "19:00"), "2026-12-01 17:00", 4 * time.Hour, "Asia/Tokyo"},
	}
	for _, c := range cases {
		cal := NewCalendar(tokyo, c.other)
		occ := cal.Occurrences(at(t, "UTC", "2026-12-01 00:00"), at(t, "UTC", "2026-12-02 00:00"))
		if len(occ) != 1 || !occ[0].Start.Equal(at(t, "UTC", c.start)) || occ[0].Duration() != c.length || occ[0].Location.String() != c.zone {
			t.Errorf("%s: occurrences = %+v, want one from %s for %s in %s", c.name, occ, c.start, c.length, c.zone)
		}
	}
	// A one-minute gap keeps two occurrences apart.
	apart := NewCalendar(tokyo, mustEntry(t, "UTC", []string{"Tue"}, "21:01", "22:00"))
	if occ := apart.Occurrences(at(t, "UTC", "2026-12-01 00:00"), at(t, "UTC", "2026-12-02 00:00")); len(occ) != 2 {
		t.Errorf("a minute apart: occurrences = %+v, want two", occ)
	}
}

func TestNextOpenAndCloseAtTheEdges(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "UTC", []string{"Mon", "Thu"}, "02:00", "06:00"))
	cases := []struct {
		now        string
		open       bool
		nextOpen   string
		nextClose  string
		occurrence string // start of the occurrence open now, "" when closed
	}{
		{"2026-11-30 01:59", false, "2026-11-30 02:00", "2026-11-30 06:00", ""},
		{"2026-11-30 02:00", true, "2026-12-03 02:00", "2026-11-30 06:00", "2026-11-30 02:00"},
		{"2026-11-30 05:59", true, "2026-12-03 02:00", "2026-11-30 06:00", "2026-11-30 02:00"},
		{"2026-11-30 06:00", false, "2026-12-03 02:00", "2026-12-03 06:00", ""},
		{"2026-12-03 12:00", false, "2026-12-07 02:00", "2026-12-07 06:00", ""},
	}
	for _, c := range cases {
		now := at(t, "UTC", c.now)
		if cal.IsOpen(now) != c.open {
			t.Errorf("%s: open = %v, want %v", c.now, !c.open, c.open)
		}
		if o, ok := cal.NextOpen(now); !ok || !o.Equal(at(t, "UTC", c.nextOpen)) {
			t.Errorf("%s: next open = %s %v, want %s", c.now, o, ok, c.nextOpen)
		}
		if cl, ok := cal.NextClose(now); !ok || !cl.Equal(at(t, "UTC", c.nextClose)) {
			t.Errorf("%s: next close = %s %v, want %s", c.now, cl, ok, c.nextClose)
		}
		occ, ok := cal.OccurrenceAt(now)
		if ok != (c.occurrence != "") || (ok && !occ.Start.Equal(at(t, "UTC", c.occurrence))) {
			t.Errorf("%s: occurrence at = %+v %v, want start %q", c.now, occ, ok, c.occurrence)
		}
	}
}

func TestNextOpenSkipsAnOccurrenceSwallowedByDST(t *testing.T) {
	// Sun 02:00–02:45 in Berlin does not exist on 2026-03-29; the next
	// occurrence is 2026-04-05 02:00 CEST = 00:00Z.
	cal := NewCalendar(mustEntry(t, "Europe/Berlin", []string{"Sun"}, "02:00", "02:45"))
	o, ok := cal.NextOpen(at(t, "UTC", "2026-03-28 12:00"))
	if !ok || !o.Equal(at(t, "UTC", "2026-04-05 00:00")) {
		t.Errorf("next open = %s %v, want 2026-04-05 00:00Z", o.UTC(), ok)
	}
	cy := cal.Measure(at(t, "UTC", "2026-03-23 12:00"))
	if len(cy.Occurrences) != 1 || !cy.Occurrences[0].Start.Equal(at(t, "UTC", "2026-04-05 00:00")) || cy.P != week || cy.D != 45*time.Minute {
		t.Errorf("cycle over the swallowed week = %+v, want one occurrence on 04-05, P = 7d, D = 45m", cy)
	}
}

func TestSixDaysOpenIsNotAlwaysOpen(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "UTC", []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}, "00:00", "24:00"))
	sun := at(t, "UTC", "2026-11-29 12:00")
	if cal.AlwaysOpen(sun) {
		t.Fatal("closed on Sundays but reported always open")
	}
	if !cal.IsOpen(at(t, "UTC", "2026-12-05 23:59")) || cal.IsOpen(at(t, "UTC", "2026-12-06 00:00")) {
		t.Error("should close at Sunday 00:00")
	}
	if c, ok := cal.NextClose(at(t, "UTC", "2026-11-30 00:00")); !ok || !c.Equal(at(t, "UTC", "2026-12-06 00:00")) {
		t.Errorf("next close from Monday = %s %v, want Sunday 00:00 (six days merged)", c, ok)
	}
	cy := cal.Measure(sun)
	if cy.AlwaysOpen || cy.P != week || cy.D != 6*24*time.Hour || cy.Gap != 24*time.Hour || len(cy.Occurrences) != 1 {
		t.Errorf("cycle = %+v, want P = 7d, D = 6d, gap = 1d, one occurrence", cy)
	}
}

func TestAlwaysOpenOccurrenceReachesPastTheScan(t *testing.T) {
	all := []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
	cal := NewCalendar(mustEntry(t, "Asia/Tokyo", all, "00:00", "24:00"))
	from := at(t, "UTC", "2026-11-30 12:00")
	to := from.Add(time.Hour)
	occ := cal.Occurrences(from, to)
	if len(occ) != 1 || occ[0].Start.After(from.Add(-week)) || occ[0].End.Before(to.Add(week)) {
		t.Fatalf("24/7 occurrences = %+v, want one reaching a week past both bounds", occ)
	}
	if !cal.AlwaysOpen(from) {
		t.Error("24/7 union not always open")
	}
	// Whole days that start at 06:00 chain into one endless occurrence too.
	shifted := NewCalendar(mustEntry(t, "Europe/Berlin", all, "06:00", "06:00"))
	if !shifted.AlwaysOpen(at(t, "UTC", "2026-10-20 12:00")) {
		t.Error("whole days from 06:00 to 06:00, across the autumn change, should be always open")
	}
}
