package schedule

import (
	"strings"
	"testing"
	"time"
)

func mustEntry(t testing.TB, tz string, days []string, start, end string) Entry {
	t.Helper()
	e, err := ParseEntry(tz, days, start, end)
	if err != nil {
		t.Fatalf("ParseEntry(%s %v %s-%s): %v", tz, days, start, end, err)
	}
	return e
}

func at(t testing.TB, tz, s string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(tz)
	if err != nil {
		t.Fatal(err)
	}
	v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func dur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

func ptr(d time.Duration) *time.Duration { return &d }

// workedInputs is the worked example of docs/design.md#age-threshold.
func workedInputs() Inputs {
	return Inputs{
		ExpireAfter: ptr(14 * 24 * time.Hour), TerminationGrace: ptr(time.Hour),
		Timing: Timing{MinRotationChances: 2, ReadyTimeout: 15 * time.Minute, CooldownAfter: 10 * time.Minute, RetryBackoff: 30 * time.Minute, MaxUnavailable: 1},
	}
}

func TestWorkedExample(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "Asia/Tokyo", []string{"Wed", "Sat"}, "02:00", "06:00"))
	now := at(t, "Asia/Tokyo", "2026-11-30 12:00")
	d := Derive(workedInputs(), cal.Measure(now))
	checks := []struct {
		name      string
		got, want time.Duration
	}{
		{"P", d.Cycle.P, 4 * 24 * time.Hour},
		{"D", d.Cycle.D, 4 * time.Hour},
		{"gap", d.Cycle.Gap, 3*24*time.Hour - 4*time.Hour},
		{"t_rot", d.TRot, dur("1h17m")},
		{"lead", d.Lead, 8*24*time.Hour + dur("1h17m")},
		{"A", d.A, 5*24*time.Hour + dur("22h43m")},
		{"t_rot_est", d.TRotEst, 15 * time.Minute},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %s, want %s", c.name, FormatDuration(c.got), FormatDuration(c.want))
		}
	}
	if d.C != 10 {
		t.Errorf("C = %d, want 10", d.C)
	}
	if d.G != 2 || !d.Derived {
		t.Errorf("G = %d derived=%v, want 2 derived", d.G, d.Derived)
	}
	if got := FormatDuration(d.A); got != "5d22h43m" {
		t.Errorf("A renders as %q", got)
	}
	if fs := Findings(workedInputs(), d, Population{}); HasFatal(fs) {
		t.Errorf("worked example has fatal findings: %+v", fs)
	}
}

func TestSaturdayOnlyIsFatal(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "Asia/Tokyo", []string{"Sat"}, "02:00", "06:00"))
	d := Derive(workedInputs(), cal.Measure(at(t, "UTC", "2026-11-30 00:00")))
	if d.Cycle.P != week {
		t.Fatalf("P = %s, want 7d", FormatDuration(d.Cycle.P))
	}
	if d.A > 0 {
		t.Fatalf("A = %s, want ≤ 0", FormatDuration(d.A))
	}
	assertReasons(t, Findings(workedInputs(), d, Population{}), map[string]Severity{"AgeThresholdNotPositive": Fatal})
}

func TestAlwaysOpen(t *testing.T) {
	all := []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
	cal := NewCalendar(mustEntry(t, "Europe/Berlin", all, "00:00", "24:00"))
	now := at(t, "UTC", "2026-03-28 10:00") // the week of a DST change
	cy := cal.Measure(now)
	if !cy.HasOccurrence || !cy.AlwaysOpen || cy.P != Tick {
		t.Fatalf("24/7 cycle = %+v, want always open with P = 1m", cy)
	}
	for h := 0; h < 24*8; h += 5 {
		if !cal.IsOpen(now.Add(time.Duration(h) * time.Hour)) {
			t.Fatalf("closed at +%dh", h)
		}
	}
	if _, ok := cal.NextOpen(now); ok {
		t.Error("a 24/7 union has no next open")
	}
	if _, ok := cal.NextClose(now); ok {
		t.Error("a 24/7 union has no next close")
	}
	d := Derive(workedInputs(), cy)
	if d.Lead != 2*Tick+d.TRot || d.A != 14*24*time.Hour-d.Lead {
		t.Errorf("24/7 derivation lead=%s A=%s", d.Lead, d.A)
	}
}

func TestNoOccurrence(t *testing.T) {
	cy := NewCalendar().Measure(at(t, "UTC", "2026-11-30 00:00"))
	if cy.HasOccurrence || cy.P != 0 {
		t.Fatalf("empty calendar cycle = %+v", cy)
	}
	d := Derive(workedInputs(), cy)
	assertReasons(t, Findings(workedInputs(), d, Population{}), map[string]Severity{"NoWindows": Fatal})
	if d.C != 0 || d.TRot == 0 || d.TRotEst == 0 {
		t.Errorf("no occurrence: C = %d (want 0), t_rot = %s, t_rot_est = %s (want non-zero)", d.C, d.TRot, d.TRotEst)
	}
}

func TestCrossMidnight(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "UTC", []string{"Fri"}, "22:00", "04:00"))
	fri := at(t, "UTC", "2026-12-04 23:00")
	if !cal.IsOpen(fri) || !cal.IsOpen(fri.Add(4*time.Hour)) {
		t.Fatal("window should be open Fri 23:00 and Sat 03:00")
	}
	if cal.IsOpen(fri.Add(5 * time.Hour)) {
		t.Fatal("window should be closed Sat 04:00")
	}
	if c, _ := cal.NextClose(fri); !c.Equal(at(t, "UTC", "2026-12-05 04:00")) {
		t.Errorf("next close = %s", c)
	}
	if o, _ := cal.NextOpen(fri); !o.Equal(at(t, "UTC", "2026-12-11 22:00")) {
		t.Errorf("next open = %s", o)
	}
	if cy := cal.Measure(fri); cy.D != 6*time.Hour || cy.P != week {
		t.Errorf("cycle D=%s P=%s", cy.D, cy.P)
	}
}

func TestSplitAcrossMidnightMerges(t *testing.T) {
	cal := NewCalendar(
		mustEntry(t, "UTC", []string{"Fri"}, "22:00", "24:00"),
		mustEntry(t, "UTC", []string{"Sat"}, "00:00", "04:00"),
	)
	midnight := at(t, "UTC", "2026-12-05 00:00")
	for _, off := range []time.Duration{-time.Minute, 0, time.Minute} {
		if !cal.IsOpen(midnight.Add(off)) {
			t.Fatalf("closed at midnight%+v: the two entries must merge", off)
		}
	}
	occ := cal.Occurrences(midnight.Add(-time.Hour), midnight.Add(time.Hour))
	if len(occ) != 1 || occ[0].Duration() != 6*time.Hour {
		t.Fatalf("occurrences = %+v, want one of 6h", occ)
	}
	if c, _ := cal.NextClose(midnight.Add(-time.Hour)); !c.Equal(at(t, "UTC", "2026-12-05 04:00")) {
		t.Errorf("next close = %s, want Sat 04:00 (no 1-minute gap at midnight)", c)
	}
	if cy := cal.Measure(midnight); cy.D != 6*time.Hour || cy.P != week || len(cy.Occurrences) != 2 || cy.Gap != week-6*time.Hour {
		t.Errorf("cycle = %+v", cy)
	}
}

func TestUnionAcrossTimezones(t *testing.T) {
	// Tokyo Wed 02:00–06:00 is Tue 17:00–21:00 UTC; a UTC entry Tue 20:00–23:00
	// overlaps it, so the union is one occurrence Tue 17:00–23:00 UTC.
	cal := NewCalendar(
		mustEntry(t, "Asia/Tokyo", []string{"Wed"}, "02:00", "06:00"),
		mustEntry(t, "UTC", []string{"Tue"}, "20:00", "23:00"),
	)
	occ := cal.Occurrences(at(t, "UTC", "2026-12-01 00:00"), at(t, "UTC", "2026-12-02 00:00"))
	if len(occ) != 1 || !occ[0].Start.Equal(at(t, "UTC", "2026-12-01 17:00")) || occ[0].Duration() != 6*time.Hour {
		t.Fatalf("occurrences = %+v", occ)
	}
}

func TestDSTEuropeBerlin(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "Europe/Berlin", []string{"Sun"}, "01:00", "04:00"))
	// Spring forward 2026-03-29: 02:00 CET → 03:00 CEST, the window is 2h long.
	o, _ := cal.NextOpen(at(t, "UTC", "2026-03-28 12:00"))
	c, _ := cal.NextClose(o)
	if !o.Equal(at(t, "UTC", "2026-03-29 00:00")) || !c.Equal(at(t, "UTC", "2026-03-29 02:00")) {
		t.Errorf("spring: open %s close %s", o.UTC(), c.UTC())
	}
	// Fall back 2026-10-25: 03:00 CEST → 02:00 CET, the window is 4h long.
	o, _ = cal.NextOpen(at(t, "UTC", "2026-10-24 12:00"))
	c, _ = cal.NextClose(o)
	if !o.Equal(at(t, "UTC", "2026-10-24 23:00")) || !c.Equal(at(t, "UTC", "2026-10-25 03:00")) {
		t.Errorf("autumn: open %s close %s", o.UTC(), c.UTC())
	}
	// A daily window: the gap across the change is 25h, so P = 25h that week.
	daily := NewCalendar(mustEntry(t, "Europe/Berlin", []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}, "04:00", "05:00"))
	if cy := daily.Measure(at(t, "UTC", "2026-10-21 12:00")); cy.P != 25*time.Hour || cy.D != time.Hour {
		t.Errorf("daily over fall-back: P=%s D=%s, want 25h and 1h", cy.P, cy.D)
	}
	if cy := daily.Measure(at(t, "UTC", "2026-11-30 12:00")); cy.P != 24*time.Hour {
		t.Errorf("daily in a plain week: P=%s, want 24h", cy.P)
	}
}

func TestDSTAmericaNewYork(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "America/New_York", []string{"Sun"}, "00:30", "03:30"))
	// Spring forward 2026-03-08: 00:30 EST = 05:30Z, 03:30 EDT = 07:30Z.
	o, _ := cal.NextOpen(at(t, "UTC", "2026-03-07 12:00"))
	c, _ := cal.NextClose(o)
	if !o.Equal(at(t, "UTC", "2026-03-08 05:30")) || !c.Equal(at(t, "UTC", "2026-03-08 07:30")) {
		t.Errorf("spring: open %s close %s", o.UTC(), c.UTC())
	}
	// Fall back 2026-11-01: 00:30 EDT = 04:30Z, 03:30 EST = 08:30Z.
	o, _ = cal.NextOpen(at(t, "UTC", "2026-10-31 12:00"))
	c, _ = cal.NextClose(o)
	if !o.Equal(at(t, "UTC", "2026-11-01 04:30")) || !c.Equal(at(t, "UTC", "2026-11-01 08:30")) {
		t.Errorf("autumn: open %s close %s", o.UTC(), c.UTC())
	}
	if !cal.IsOpen(at(t, "UTC", "2026-11-01 08:29")) || cal.IsOpen(at(t, "UTC", "2026-11-01 08:30")) {
		t.Error("is-open disagrees with the autumn close")
	}
}

func TestBackoffLadder(t *testing.T) {
	want := []time.Duration{30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 4 * time.Hour}
	for i, w := range want {
		if got := EscalatedBackoff(30*time.Minute, i+1); got != w {
			t.Errorf("retry-count %d: %s, want %s", i+1, got, w)
		}
	}
	if got := EscalatedBackoff(30*time.Minute, 0); got != 30*time.Minute {
		t.Errorf("retry-count 0: %s", got)
	}
}

func TestWindowAwareClamp(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "UTC", []string{"Mon"}, "02:00", "06:00"))
	day := "2026-11-30 " // a Monday
	cases := []struct {
		failedAt string
		retries  int
		wait     time.Duration
		branch   ClampCase
	}{
		{"02:10", 1, 30 * time.Minute, ClampFits},
		{"04:00", 4, 30 * time.Minute, ClampSteppedDown},
		{"05:45", 3, 2 * time.Hour, ClampCarriesOver},
		{"07:00", 2, time.Hour, ClampNotInWindow},
	}
	for _, c := range cases {
		wait, branch := cal.RetryWait(at(t, "UTC", day+c.failedAt), 30*time.Minute, c.retries)
		if wait != c.wait || branch != c.branch {
			t.Errorf("failed at %s retry %d: %s %s, want %s %s", c.failedAt, c.retries, wait, branch, c.wait, c.branch)
		}
	}
}

func TestLayerOneFindings(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "UTC", []string{"Mon", "Thu"}, "02:00", "06:00"))
	cy := cal.Measure(at(t, "UTC", "2026-11-30 12:00"))
	base := workedInputs
	cases := []struct {
		name   string
		mutate func(*Inputs)
		want   map[string]Severity
	}{
		{"clean", func(*Inputs) {}, nil},
		{"K=1", func(in *Inputs) { in.MinRotationChances = 1 }, map[string]Severity{"KBelowTwo": Warning}},
		{"K=0", func(in *Inputs) { in.MinRotationChances = 0 }, map[string]Severity{"MinRotationChancesBelowOne": Fatal}},
		{"tGP unset", func(in *Inputs) { in.TerminationGrace = nil }, map[string]Severity{"TGPUnset": Info}},
		{"hard cap", func(in *Inputs) { in.ExpireAfter, in.LifetimeCap = ptr(21*24*time.Hour), EKSAutoModeLifetime }, map[string]Severity{"HardCapExceeded": Warning}},
		{"retry short", func(in *Inputs) { in.RetryBackoff = 5 * time.Minute }, map[string]Severity{"RetryBackoffShort": Warning}},
		{"drain estimate", func(in *Inputs) { in.DrainEstimate = ptr(2 * time.Hour) }, map[string]Severity{"DrainEstimateAboveTGP": Warning}},
		{"provisioning estimate", func(in *Inputs) { in.ProvisioningEstimate = ptr(time.Hour) },
			map[string]Severity{"ProvisioningEstimateAboveReadyTimeout": Warning}},
		{"A < P", func(in *Inputs) { in.ExpireAfter = ptr(9 * 24 * time.Hour) }, map[string]Severity{"AVeryAggressive": Warning}},
		{"override G<K", func(in *Inputs) { in.AgeThreshold = ptr(9 * 24 * time.Hour) }, map[string]Severity{"OverrideGBelowK": Warning}},
		{"override G<1", func(in *Inputs) { in.AgeThreshold = ptr(12 * 24 * time.Hour) }, map[string]Severity{"OverrideGBelowOne": Fatal}},
		{"never expires", func(in *Inputs) { in.ExpireAfter = nil }, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := base()
			c.mutate(&in)
			d := Derive(in, cy)
			assertReasons(t, layer1(in, d), c.want)
		})
	}
}

func TestLayerTwoFindings(t *testing.T) {
	in := workedInputs()
	cal := NewCalendar(mustEntry(t, "Asia/Tokyo", []string{"Wed", "Sat"}, "02:00", "06:00"))
	d := Derive(in, cal.Measure(at(t, "UTC", "2026-11-30 00:00")))
	// N·P/A = N·4d/5.95d; C = 10 → arrival beats capacity from N = 15.
	assertReasons(t, layer2(in, d, Population{Nodes: 14, Burst: 20}), nil)
	assertReasons(t, layer2(in, d, Population{Nodes: 15, Burst: 21}),
		map[string]Severity{"ThroughputBelowArrival": Warning, "ThroughputBurstShortfall": Warning})
	in.CooldownAfter = 4 * 24 * time.Hour
	d = Derive(in, d.Cycle)
	assertReasons(t, layer2(in, d, Population{}), map[string]Severity{"RotationSpansNextWindow": Warning})
}

func TestShortLead(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "Asia/Tokyo", []string{"Wed", "Sat"}, "02:00", "06:00"))
	d := Derive(workedInputs(), cal.Measure(at(t, "UTC", "2026-11-30 00:00")))
	if !d.ShortLead(d.Lead) || d.ShortLead(d.Lead+time.Second) {
		t.Errorf("ShortLead boundary wrong around lead %s", d.Lead)
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 4 * 24 * time.Hour: "4d", dur("1h17m"): "1h17m", 90 * time.Second: "1m30s",
		-dur("2h"): "-2h", 5*24*time.Hour + dur("22h43m"): "5d22h43m", 1500 * time.Millisecond: "1s500ms",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestParseEntryErrors(t *testing.T) {
	cases := []struct {
		tz, start, end string
		days           []string
		want           string
	}{
		{"", "02:00", "03:00", []string{"Mon"}, "timezone: must not be empty"},
		{"Mars/Olympus", "02:00", "03:00", []string{"Mon"}, `timezone "Mars/Olympus": not a loadable IANA time zone`},
		{"UTC", "02:00", "03:00", nil, "days: at least one"},
		{"UTC", "02:00", "03:00", []string{"Funday"}, `days[0] "Funday"`},
		{"UTC", "02:00", "03:00", []string{"Mon", "Mon"}, `days[1] "Mon": listed twice`},
		{"UTC", "2:00", "03:00", []string{"Mon"}, `start "2:00": want HH:MM`},
		{"UTC", "24:00", "03:00", []string{"Mon"}, `start "24:00": hour must be 00..23`},
		{"UTC", "02:00", "24:01", []string{"Mon"}, `end "24:01"`},
		{"UTC", "02:00", "03:60", []string{"Mon"}, `end "03:60": want HH:MM`},
	}
	for _, c := range cases {
		_, err := ParseEntry(c.tz, c.days, c.start, c.end)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseEntry(%q,%v,%q,%q) = %v, want error containing %q", c.tz, c.days, c.start, c.end, err, c.want)
		}
	}
}

func assertReasons(t *testing.T, got []Finding, want map[string]Severity) {
	t.Helper()
	seen := map[string]Severity{}
	for _, f := range got {
		seen[f.Reason] = f.Severity
		if f.Message == "" || f.Remedy == "" {
			t.Errorf("finding %s lacks a message or remedy", f.Reason)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("findings = %v, want %v", seen, want)
		return
	}
	for r, s := range want {
		if seen[r] != s {
			t.Errorf("finding %s = %q, want %q (all: %v)", r, seen[r], s, seen)
		}
	}
}
