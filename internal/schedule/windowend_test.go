package schedule

import (
	"testing"
	"time"
)

// The start hold (docs/design.md#window-end): the forecast less the
// cutoff, only when a cutoff is set.
func TestStartHold(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	for _, c := range []struct {
		cutoff *time.Duration
		want   time.Duration
	}{
		{nil, 0}, {d(0), 20 * time.Minute}, {d(5 * time.Minute), 15 * time.Minute}, {d(time.Hour), 0},
	} {
		if got := (Timing{StartCutoff: c.cutoff}).StartHold(20 * time.Minute); got != c.want {
			t.Errorf("cutoff %v: hold %s, want %s", c.cutoff, got, c.want)
		}
	}
}

// C counts the starts that fit before the close less the hold; a hold as
// long as the occurrence holds nothing, with a warning; an always-open
// window has no close.
func TestDeriveWithStartCutoff(t *testing.T) {
	zero := time.Duration(0)
	prov, drain := 10*time.Minute, 10*time.Minute
	in := Inputs{Timing: Timing{MinRotationChances: 2, ReadyTimeout: 15 * time.Minute, CooldownAfter: 10 * time.Minute,
		ProvisioningEstimate: &prov, DrainEstimate: &drain, MaxUnavailable: 1}}
	// 4h occurrences, t_rot_est 20m, a start every 30m: 8 starts at 0, 30m
	// … 3h30; holding the last 20m (from 3h40) keeps all 8.
	if d := Derive(in, baseCycle()); d.StartHold != 0 || d.C != 8 {
		t.Errorf("no cutoff: hold %s C %d, want 0 and 8", d.StartHold, d.C)
	}
	in.StartCutoff = &zero
	if d := Derive(in, baseCycle()); d.StartHold != 20*time.Minute || d.C != 8 {
		t.Errorf("cutoff 0: hold %s C %d, want 20m and 8", d.StartHold, d.C)
	}
	in.CooldownAfter = 0 // a start every 20m: 12 at 0 … 3h40 without the hold, 11 with it
	if d := Derive(in, baseCycle()); d.C != 11 {
		t.Errorf("cutoff 0, no cooldown: C %d, want 11", d.C)
	}
	in.CooldownAfter = 10 * time.Minute
	long := 3*time.Hour + 40*time.Minute
	in.ProvisioningEstimate = &long // t_rot_est 3h50m, a start every 4h: 1 start, held for 3h50m of 4h
	if d := Derive(in, baseCycle()); d.StartHold != long+drain || d.C != 1 {
		t.Errorf("hold %s C %d, want 3h50m and 1", d.StartHold, d.C)
	}
	warned := func(in Inputs) bool {
		e := 14 * day
		in.ExpireAfter = &e
		for _, f := range Findings(in, Derive(in, baseCycle()), Population{Nodes: 1, Burst: 1}) {
			if f.Reason == "StartHoldCoversWindow" {
				return f.Severity == Warning
			}
		}
		return false
	}
	if warned(in) {
		t.Error("a hold of 3h50m in 4h occurrences is warned")
	}
	exact := 3*time.Hour + 50*time.Minute
	in.ProvisioningEstimate = &exact // t_rot_est 4h = D: the hold would cover it all, so it holds nothing
	if d := Derive(in, baseCycle()); d.C != 1 || !warned(in) {
		t.Errorf("hold = D: C %d (want 1, nothing held), warned %v", d.C, warned(in))
	}
	always := Cycle{HasOccurrence: true, AlwaysOpen: true, P: Tick, D: week}
	longer := 4 * time.Hour
	in.ProvisioningEstimate = &longer
	if d := Derive(in, always); d.StartHold != 0 || d.C == 0 {
		t.Errorf("always open: hold %s C %d", d.StartHold, d.C)
	}
}

// The forecast places no start in the hold at the end of an occurrence.
func TestForecastRespectsTheStartHold(t *testing.T) {
	e, err := ParseEntry("UTC", []string{"Tue", "Thu"}, "02:00", "04:00")
	if err != nil {
		t.Fatal(err)
	}
	cal := NewCalendar(e)
	tm := func(day, h, m int) time.Time { return time.Date(2026, 12, day, h, m, 0, 0, time.UTC) }
	zero := time.Duration(0)
	timing := Timing{CooldownAfter: 10 * time.Minute, MaxUnavailable: 1, StartCutoff: &zero}
	// est 20m: no start from 03:40 on; one due at 03:45 moves to Thursday
	f := cal.ForecastRotations(tm(1, 3, 45), 2, timing, 20*time.Minute)
	if len(f.Starts) != 2 || !f.Starts[0].Equal(tm(3, 2, 0)) || !f.Starts[1].Equal(tm(3, 2, 30)) {
		t.Errorf("starts %v, want Thursday 02:00 and 02:30", f.Starts)
	}
	if f := cal.ForecastRotations(tm(1, 3, 15), 1, timing, 20*time.Minute); len(f.Starts) != 1 || !f.Starts[0].Equal(tm(1, 3, 15)) {
		t.Errorf("a start 45m before the close fits: %v", f.Starts)
	}
}
