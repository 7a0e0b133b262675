package schedule

import (
	"strings"
	"testing"
	"time"
)

func TestParseEntryValues(t *testing.T) {
	cases := []struct {
		name       string
		tz         string
		days       []string
		start, end string
		wantStart  int
		wantEnd    int
		wantDays   []time.Weekday
	}{
		{"plain", "UTC", []string{"Mon"}, "02:00", "06:00", 120, 360, []time.Weekday{time.Monday}},
		{"crosses midnight", "UTC", []string{"Fri"}, "22:00", "04:00", 1320, 1440 + 240, []time.Weekday{time.Friday}},
		{"start equals end is a whole day", "UTC", []string{"Sun"}, "06:00", "06:00", 360, 360 + 1440, []time.Weekday{time.Sunday}},
		{"midnight to midnight is a whole day", "UTC", []string{"Tue"}, "00:00", "00:00", 0, 1440, []time.Weekday{time.Tuesday}},
		{"24:00 closes at midnight", "UTC", []string{"Sat"}, "00:00", "24:00", 0, 1440, []time.Weekday{time.Saturday}},
		{"last minute to midnight", "UTC", []string{"Sat"}, "23:59", "00:00", 1439, 1440, []time.Weekday{time.Saturday}},
		{"one minute short of a day", "UTC", []string{"Wed"}, "23:59", "23:58", 1439, 1438 + 1440, []time.Weekday{time.Wednesday}},
		{"several days in any order", "Asia/Tokyo", []string{"Sat", "Wed"}, "02:00", "06:00", 120, 360, []time.Weekday{time.Wednesday, time.Saturday}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := ParseEntry(c.tz, c.days, c.start, c.end)
			if err != nil {
				t.Fatal(err)
			}
			if e.Start != c.wantStart || e.End != c.wantEnd {
				t.Errorf("start %d end %d, want %d %d", e.Start, e.End, c.wantStart, c.wantEnd)
			}
			var want [7]bool
			for _, d := range c.wantDays {
				want[d] = true
			}
			if e.Days != want {
				t.Errorf("days = %v, want %v", e.Days, want)
			}
			if e.Location.String() != c.tz {
				t.Errorf("location = %s, want %s", e.Location, c.tz)
			}
		})
	}
}

func TestParseClockErrors(t *testing.T) {
	cases := []struct {
		start, end string
		want       string
	}{
		{"0200", "03:00", `start "0200": want HH:MM`},
		{"02:0", "03:00", `start "02:0": want HH:MM`},
		{"ab:cd", "03:00", `start "ab:cd": want HH:MM`},
		{"", "03:00", `start "": want HH:MM`},
		{"02:00:00", "03:00", `start "02:00:00": want HH:MM`},
		{"-1:00", "03:00", `start "-1:00": want HH:MM`},
		{"24:00", "03:00", `start "24:00": hour must be 00..23`},
		{"02:00", "25:00", `end "25:00": hour must be 00..23, or the time exactly 24:00`},
		{"02:00", "24:30", `end "24:30": hour must be 00..23, or the time exactly 24:00`},
		{"02:00", "12:99", `end "12:99": want HH:MM`},
	}
	for _, c := range cases {
		_, err := ParseEntry("UTC", []string{"Mon"}, c.start, c.end)
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseEntry(%q, %q) = %v, want %q", c.start, c.end, err, c.want)
		}
	}
}

func TestParseEntryDayErrors(t *testing.T) {
	cases := []struct {
		days []string
		want string
	}{
		{[]string{}, "days: at least one of Mon..Sun is required"},
		{[]string{"Mon", "mon"}, `days[1] "mon": not one of Mon, Tue, Wed, Thu, Fri, Sat, Sun`},
		{[]string{"Monday"}, `days[0] "Monday": not one of`},
		{[]string{"Tue", "Wed", "Tue"}, `days[2] "Tue": listed twice`},
	}
	for _, c := range cases {
		_, err := ParseEntry("UTC", c.days, "02:00", "03:00")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("days %q: %v, want prefix %q", c.days, err, c.want)
		}
	}
}

func TestWallTimeInDSTGap(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	ny, _ := time.LoadLocation("America/New_York")
	utc := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		name    string
		y       int
		m       time.Month
		d, mins int
		loc     *time.Location
		want    time.Time
	}{
		// 2026-03-29 Berlin: 02:00 CET jumps to 03:00 CEST = 01:00Z.
		{"before the gap", 2026, time.March, 29, 1*60 + 59, berlin, utc("2026-03-29 00:59")},
		{"start of the gap", 2026, time.March, 29, 2 * 60, berlin, utc("2026-03-29 01:00")},
		{"inside the gap", 2026, time.March, 29, 2*60 + 30, berlin, utc("2026-03-29 01:00")},
		{"end of the gap", 2026, time.March, 29, 3 * 60, berlin, utc("2026-03-29 01:00")},
		{"after the gap", 2026, time.March, 29, 3*60 + 1, berlin, utc("2026-03-29 01:01")},
		{"the gap reached through the next day's minutes", 2026, time.March, 28, 1440 + 2*60 + 30, berlin, utc("2026-03-29 01:00")},
		// 2026-03-08 New York: 02:00 EST jumps to 03:00 EDT = 07:00Z.
		{"New York before the gap", 2026, time.March, 8, 1*60 + 59, ny, utc("2026-03-08 06:59")},
		{"New York start of the gap", 2026, time.March, 8, 2 * 60, ny, utc("2026-03-08 07:00")},
		{"New York inside the gap", 2026, time.March, 8, 2*60 + 30, ny, utc("2026-03-08 07:00")},
		{"New York after the gap", 2026, time.March, 8, 3 * 60, ny, utc("2026-03-08 07:00")},
		{"plain day", 2026, time.June, 1, 12 * 60, berlin, utc("2026-06-01 10:00")},
	}
	for _, c := range cases {
		if got := wallTime(c.y, c.m, c.d, c.mins, c.loc); !got.Equal(c.want) {
			t.Errorf("%s: wallTime = %s, want %s", c.name, got.UTC(), c.want)
		}
	}
}

func TestPieceSwallowedByDSTGap(t *testing.T) {
	// 02:00–02:45 on the spring-forward Sunday never shows on a Berlin clock.
	e := mustEntry(t, "Europe/Berlin", []string{"Sun"}, "02:00", "02:45")
	if p, ok := e.piece(2026, time.March, 29); ok {
		t.Errorf("piece in the gap = %+v, want none", p)
	}
	if p, ok := e.piece(2026, time.April, 5); !ok || p.Duration() != 45*time.Minute {
		t.Errorf("piece a week later = %+v %v, want 45m", p, ok)
	}
	// A piece half in the gap runs from its start to the transition.
	half := mustEntry(t, "Europe/Berlin", []string{"Sun"}, "01:30", "02:30")
	p, ok := half.piece(2026, time.March, 29)
	if !ok || !p.Start.Equal(at(t, "UTC", "2026-03-29 00:30")) || !p.End.Equal(at(t, "UTC", "2026-03-29 01:00")) {
		t.Errorf("half-swallowed piece = %+v %v, want 00:30Z–01:00Z", p, ok)
	}
}

func TestPiecesCoverTheScan(t *testing.T) {
	e := mustEntry(t, "UTC", []string{"Mon", "Thu"}, "02:00", "06:00")
	// [Wed 2026-12-02, Fri 2026-12-04) local days scanned: Mon 11-30 .. Sat 12-05.
	got := e.pieces(at(t, "UTC", "2026-12-02 00:00"), at(t, "UTC", "2026-12-04 00:00"))
	want := []string{"2026-11-30 02:00", "2026-12-03 02:00"}
	if len(got) != len(want) {
		t.Fatalf("pieces = %+v, want starts %v", got, want)
	}
	for i, w := range want {
		if !got[i].Start.Equal(at(t, "UTC", w)) || got[i].Duration() != 4*time.Hour || got[i].Location != e.Location {
			t.Errorf("piece %d = %+v, want start %s, 4h, in UTC", i, got[i], w)
		}
	}
}

func TestOddOffsetZones(t *testing.T) {
	// Kathmandu is UTC+05:45 all year.
	ktm := NewCalendar(mustEntry(t, "Asia/Kathmandu", []string{"Mon"}, "00:00", "01:00"))
	o, ok := ktm.NextOpen(at(t, "UTC", "2026-11-28 00:00"))
	if !ok || !o.Equal(at(t, "UTC", "2026-11-29 18:15")) {
		t.Errorf("Kathmandu next open = %s, want 2026-11-29 18:15Z", o.UTC())
	}
	// Lord Howe moves its clock by 30 minutes: on 2026-10-04 02:00 +10:30
	// becomes 02:30 +11:00, so a 02:00–03:00 window lasts 30 minutes.
	lhi := NewCalendar(mustEntry(t, "Australia/Lord_Howe", []string{"Sun"}, "02:00", "03:00"))
	occ := lhi.Occurrences(at(t, "UTC", "2026-10-03 12:00"), at(t, "UTC", "2026-10-04 00:00"))
	if len(occ) != 1 || !occ[0].Start.Equal(at(t, "UTC", "2026-10-03 15:30")) || occ[0].Duration() != 30*time.Minute {
		t.Errorf("Lord Howe spring-forward occurrence = %+v, want 15:30Z for 30m", occ)
	}
}

// A window in a zone west of UTC whose hours touch the spring-forward gap
// stays a weekly window: the gap never merges it into one long occurrence
// reaching back to the autumn change (found by a unit test: New York
// Sundays 02:00–05:00 were open for the whole winter before 2026-03-08).
func TestWestOfUTCWindowAcrossTheSpringGap(t *testing.T) {
	e := mustEntry(t, "America/New_York", []string{"Sun"}, "02:00", "05:00")
	p, ok := e.piece(2026, time.March, 8)
	if !ok {
		t.Fatal("no piece on the spring-forward Sunday")
	}
	if want := time.Date(2026, time.March, 8, 7, 0, 0, 0, time.UTC); !p.Start.Equal(want) {
		t.Errorf("opens at %s, want %s (03:00 EDT, the end of the gap)", p.Start.UTC(), want)
	}
	if p.Duration() != 2*time.Hour {
		t.Errorf("lasts %s, want 2h (03:00–05:00 EDT)", p.Duration())
	}
}
