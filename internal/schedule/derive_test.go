package schedule

import (
	"reflect"
	"testing"
	"time"
)

const day = 24 * time.Hour

func TestMeasure(t *testing.T) {
	daily := []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
	cases := []struct {
		name    string
		entries []Entry
		now     string // UTC; 2026-11-30 is a Monday
		p, d    time.Duration
		gap     time.Duration
		n       int // occurrences of the measured week
		first   string
	}{
		{"Mon and Thu, measured closed", []Entry{mustEntry(t, "UTC", []string{"Mon", "Thu"}, "02:00", "06:00")},
			"2026-11-30 12:00", 4 * day, 4 * time.Hour, 3*day - 4*time.Hour, 2, "2026-12-03 02:00"},
		{"Mon and Thu, measured open: the open one counts", []Entry{mustEntry(t, "UTC", []string{"Mon", "Thu"}, "02:00", "06:00")},
			"2026-11-30 03:00", 4 * day, 4 * time.Hour, 3*day - 4*time.Hour, 3, "2026-11-30 02:00"},
		{"different lengths: D is the shortest", []Entry{
			mustEntry(t, "UTC", []string{"Mon"}, "02:00", "06:00"),
			mustEntry(t, "UTC", []string{"Thu"}, "02:00", "03:00")},
			"2026-11-30 12:00", 4 * day, time.Hour, 3*day - 4*time.Hour, 2, "2026-12-03 02:00"},
		{"one minute short of 24/7", []Entry{mustEntry(t, "UTC", daily, "00:00", "23:59")},
			"2026-11-30 12:00", day, day - time.Minute, time.Minute, 8, "2026-11-30 00:00"},
		{"weekly", []Entry{mustEntry(t, "UTC", []string{"Wed"}, "22:00", "02:00")},
			"2026-11-30 12:00", week, 4 * time.Hour, week - 4*time.Hour, 1, "2026-12-02 22:00"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cy := NewCalendar(c.entries...).Measure(at(t, "UTC", c.now))
			if !cy.HasOccurrence || cy.AlwaysOpen {
				t.Fatalf("cycle = %+v", cy)
			}
			if cy.P != c.p || cy.D != c.d || cy.Gap != c.gap {
				t.Errorf("P %s D %s gap %s, want %s %s %s", FormatDuration(cy.P), FormatDuration(cy.D), FormatDuration(cy.Gap),
					FormatDuration(c.p), FormatDuration(c.d), FormatDuration(c.gap))
			}
			if len(cy.Occurrences) != c.n || !cy.Occurrences[0].Start.Equal(at(t, "UTC", c.first)) {
				t.Errorf("%d occurrences from %s, want %d from %s", len(cy.Occurrences), cy.Occurrences[0].Start, c.n, c.first)
			}
		})
	}
}

func TestMeasureAlwaysOpenFigures(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "UTC", []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}, "00:00", "00:00"))
	cy := cal.Measure(at(t, "UTC", "2026-11-30 12:00"))
	if want := (Cycle{HasOccurrence: true, AlwaysOpen: true, P: Tick, D: week}); cy.HasOccurrence != want.HasOccurrence ||
		cy.AlwaysOpen != want.AlwaysOpen || cy.P != want.P || cy.D != want.D || cy.Gap != 0 || cy.Occurrences != nil {
		t.Errorf("cycle = %+v, want %+v", cy, want)
	}
}

// baseCycle is the worked example's cycle (Wed and Sat, 4h each) as plain figures.
func baseCycle() Cycle {
	return Cycle{HasOccurrence: true, P: 4 * day, D: 4 * time.Hour, Gap: 3*day - 4*time.Hour}
}

func TestDeriveDefaultsAndFigures(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Inputs)
		cy     Cycle
		want   Derivation // only the compared fields
	}{
		{"worked example", func(*Inputs) {}, baseCycle(), Derivation{
			TGP: time.Hour, TRot: dur("1h17m"), TRotEst: 15 * time.Minute, Lead: 8*day + dur("1h17m"), A: 5*day + dur("22h43m"),
			Derived: true, G: 2, C: 10, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 5 * time.Minute}},
		{"long cooldown raises failurePause", func(in *Inputs) { in.CooldownAfter = 30 * time.Minute }, baseCycle(), Derivation{
			TGP: time.Hour, TRot: dur("1h17m"), TRotEst: 15 * time.Minute, Lead: 8*day + dur("1h17m"), A: 5*day + dur("22h43m"),
			Derived: true, G: 2, C: 6, FailurePause: 30 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 5 * time.Minute}},
		{"short readyTimeout bounds the provisioning estimate", func(in *Inputs) { in.ReadyTimeout = 3 * time.Minute }, baseCycle(), Derivation{
			TGP: time.Hour, TRot: dur("1h5m"), TRotEst: 13 * time.Minute, Lead: 8*day + dur("1h5m"), A: 5*day + dur("22h55m"),
			Derived: true, G: 2, C: 11, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 3 * time.Minute}},
		{"short tGP bounds the drain estimate", func(in *Inputs) { in.TerminationGrace = ptr(4 * time.Minute) }, baseCycle(), Derivation{
			TGP: 4 * time.Minute, TRot: 21 * time.Minute, TRotEst: 9 * time.Minute, Lead: 8*day + 21*time.Minute, A: 5*day + dur("23h39m"),
			Derived: true, G: 2, C: 13, FailurePause: 10 * time.Minute, DrainEstimate: 4 * time.Minute, ProvisioningEstimate: 5 * time.Minute}},
		{"unset tGP falls back to 1h", func(in *Inputs) { in.TerminationGrace = nil }, baseCycle(), Derivation{
			TGPUnset: true, TGP: time.Hour, TRot: dur("1h17m"), TRotEst: 15 * time.Minute, Lead: 8*day + dur("1h17m"), A: 5*day + dur("22h43m"),
			Derived: true, G: 2, C: 10, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 5 * time.Minute}},
		{"explicit zeros are kept, and service time floors at the tick", func(in *Inputs) {
			in.FailurePause, in.DrainEstimate, in.ProvisioningEstimate, in.CooldownAfter = ptr(0), ptr(0), ptr(0), 0
		}, baseCycle(), Derivation{
			TGP: time.Hour, TRot: dur("1h17m"), Lead: 8*day + dur("1h17m"), A: 5*day + dur("22h43m"), Derived: true, G: 2, C: 240}},
		{"C divides exactly", func(in *Inputs) { in.ProvisioningEstimate, in.DrainEstimate = ptr(10*time.Minute), ptr(10*time.Minute) }, baseCycle(), Derivation{
			TGP: time.Hour, TRot: dur("1h17m"), TRotEst: 20 * time.Minute, Lead: 8*day + dur("1h17m"), A: 5*day + dur("22h43m"),
			Derived: true, G: 2, C: 8, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 10 * time.Minute}},
		{"C rounds a partial slot up", func(in *Inputs) { in.ProvisioningEstimate, in.DrainEstimate = ptr(10*time.Minute), ptr(10*time.Minute) },
			Cycle{HasOccurrence: true, P: 4 * day, D: 4*time.Hour + time.Nanosecond}, Derivation{
				TGP: time.Hour, TRot: dur("1h17m"), TRotEst: 20 * time.Minute, Lead: 8*day + dur("1h17m"), A: 5*day + dur("22h43m"),
				Derived: true, G: 2, C: 9, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 10 * time.Minute}},
		{"the pre-pull timeout lengthens t_rot and t_rot_est", func(in *Inputs) { in.PrePullTimeout = 10 * time.Minute }, baseCycle(), Derivation{
			TGP: time.Hour, TRot: dur("1h27m"), TRotEst: 25 * time.Minute, Lead: 8*day + dur("1h27m"), A: 5*day + dur("22h33m"),
			Derived: true, G: 2, C: 7, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 5 * time.Minute}},
		{"maxUnavailable multiplies C", func(in *Inputs) { in.MaxUnavailable = 3 }, baseCycle(), Derivation{
			TGP: time.Hour, TRot: dur("1h17m"), TRotEst: 15 * time.Minute, Lead: 8*day + dur("1h17m"), A: 5*day + dur("22h43m"),
			Derived: true, G: 2, C: 30, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 5 * time.Minute}},
		{"maxUnavailable 0 counts as 1", func(in *Inputs) { in.MaxUnavailable = 0 }, baseCycle(), Derivation{
			TGP: time.Hour, TRot: dur("1h17m"), TRotEst: 15 * time.Minute, Lead: 8*day + dur("1h17m"), A: 5*day + dur("22h43m"),
			Derived: true, G: 2, C: 10, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 5 * time.Minute}},
		{"K = 3 lengthens the lead", func(in *Inputs) { in.MinRotationChances = 3 }, baseCycle(), Derivation{
			TGP: time.Hour, TRot: dur("1h17m"), TRotEst: 15 * time.Minute, Lead: 12*day + dur("1h17m"), A: day + dur("22h43m"),
			Derived: true, G: 3, C: 10, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 5 * time.Minute}},
		{"override: G counts the chances it leaves", func(in *Inputs) { in.AgeThreshold = ptr(9 * day) }, baseCycle(), Derivation{
			TGP: time.Hour, TRot: dur("1h17m"), TRotEst: 15 * time.Minute, Lead: 8*day + dur("1h17m"), A: 9 * day,
			G: 1, C: 10, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 5 * time.Minute}},
		{"override past the deadline leaves no chance", func(in *Inputs) { in.AgeThreshold = ptr(14 * day) }, baseCycle(), Derivation{
			TGP: time.Hour, TRot: dur("1h17m"), TRotEst: 15 * time.Minute, Lead: 8*day + dur("1h17m"), A: 14 * day,
			G: 0, C: 10, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 5 * time.Minute}},
		{"expireAfter Never: no age figures", func(in *Inputs) { in.ExpireAfter = nil }, baseCycle(), Derivation{
			NoDeadline: true, TGP: time.Hour, TRot: dur("1h17m"), TRotEst: 15 * time.Minute,
			C: 10, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 5 * time.Minute}},
		{"no occurrence: lead is t_rot, nothing guaranteed", func(*Inputs) {}, Cycle{}, Derivation{
			TGP: time.Hour, TRot: dur("1h17m"), TRotEst: 15 * time.Minute, Lead: dur("1h17m"), A: 14*day - dur("1h17m"),
			Derived: true, FailurePause: 10 * time.Minute, DrainEstimate: 10 * time.Minute, ProvisioningEstimate: 5 * time.Minute}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := workedInputs()
			c.mutate(&in)
			d := Derive(in, c.cy)
			got := d
			got.Cycle = Cycle{}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("derivation\n got %+v\nwant %+v", got, c.want)
			}
			if d.Cycle.P != c.cy.P || d.Cycle.D != c.cy.D {
				t.Errorf("the cycle is not carried: %+v", d.Cycle)
			}
		})
	}
}

func TestChances(t *testing.T) {
	cases := []struct {
		span, p time.Duration
		want    int
	}{
		{8 * day, 4 * day, 2},
		{8*day - time.Nanosecond, 4 * day, 1},
		{4*day - time.Nanosecond, 4 * day, 0},
		{0, 4 * day, 0},
		{-time.Hour, 4 * day, 0},
		{8 * day, 0, 0},
		{8 * day, -day, 0},
		{time.Hour, Tick, 60},
	}
	for _, c := range cases {
		if got := chances(c.span, c.p); got != c.want {
			t.Errorf("chances(%s, %s) = %d, want %d", c.span, c.p, got, c.want)
		}
	}
}

func TestShortLeadNeedsADeadlineAndAnOccurrence(t *testing.T) {
	lead := 8*day + dur("1h17m")
	timed := Derive(workedInputs(), baseCycle())
	cases := []struct {
		name string
		d    Derivation
		e    time.Duration
		want bool
	}{
		{"below the lead", timed, lead - time.Second, true},
		{"at the lead", timed, lead, true},
		{"past the lead", timed, lead + time.Second, false},
		{"no deadline", Derive(Inputs{Timing: workedInputs().Timing}, baseCycle()), time.Hour, false},
		{"no occurrence", Derive(workedInputs(), Cycle{}), time.Hour, false},
	}
	for _, c := range cases {
		if got := c.d.ShortLead(c.e); got != c.want {
			t.Errorf("%s: ShortLead(%s) = %v, want %v", c.name, FormatDuration(c.e), got, c.want)
		}
	}
}
