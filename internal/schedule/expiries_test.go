package schedule

import (
	"fmt"
	"testing"
	"time"
)

// The fleet pool of the issue — 300 claims whose deadlines spread over the
// next 30 days, Tue and Sat 02:00–06:00, C = 10 a window at one rotation
// at a time — loses about as many in four weeks as its rate says (55 due a
// window, 10 fit); at the maxUnavailable the verdict names, none.
func TestExpiriesAheadOfTheFleetPool(t *testing.T) {
	in, cy := fleetPool(t)
	now := at(t, "UTC", "2026-11-30 12:00")
	cal := NewCalendar(mustEntry(t, "UTC", []string{"Tue", "Sat"}, "02:00", "06:00"))
	one := in
	one.MaxUnavailable = 1
	d := Derive(one, cy)
	var claims []Due
	for i := range 300 {
		deadline := now.Add(time.Duration(i) * 30 * 24 * time.Hour / 300)
		claims = append(claims, Due{Name: fmt.Sprintf("c%03d", i), Trigger: deadline.Add(-d.Lead), Deadline: deadline})
	}
	until := now.Add(28 * 24 * time.Hour)
	lost := cal.ExpiriesAhead([]time.Time{now}, claims, one.Timing, d.TRotEst, until)
	// 8 occurrences in 28 days carry 80 starts: of the 280 claims whose
	// deadline falls in them, about 200 are lost
	if len(lost) < 180 || len(lost) > 215 {
		t.Errorf("%d lost at one rotation at a time, want about 200", len(lost))
	}
	for _, l := range lost {
		if !l.Deadline.Before(until) {
			t.Fatalf("%s lost past the horizon: %s", l.Name, l.Deadline)
		}
	}
	six := in
	six.MaxUnavailable = 6
	free := []time.Time{now, now, now, now, now, now}
	first, _ := cal.NextOpen(now)
	lost = cal.ExpiriesAhead(free, claims, six.Timing, d.TRotEst, until)
	for _, l := range lost {
		if !l.Deadline.Before(first.Add(d.TRotEst)) {
			t.Errorf("%s (deadline %s) lost at six at a time: only the claims due before the first window's first rotation could end are", l.Name, l.Deadline)
		}
	}
	if len(lost) == 0 {
		t.Error("the claims due before the first window are lost at any maxUnavailable")
	}
}

// A claim due before any start could end it is lost; one whose deadline a
// window meets is not; one past the horizon is not judged.
func TestExpiriesAheadEdges(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "UTC", []string{"Sat"}, "02:00", "06:00"))
	now := at(t, "UTC", "2026-11-30 12:00") // Monday
	tm := Timing{CooldownAfter: 10 * time.Minute}
	claims := []Due{
		{Name: "before-saturday", Trigger: now, Deadline: now.Add(24 * time.Hour)},
		{Name: "after-saturday", Trigger: now, Deadline: now.Add(6 * 24 * time.Hour)},
		{Name: "next-month", Trigger: now, Deadline: now.Add(40 * 24 * time.Hour)},
	}
	lost := cal.ExpiriesAhead([]time.Time{now}, claims, tm, 15*time.Minute, now.Add(28*24*time.Hour))
	if len(lost) != 1 || lost[0].Name != "before-saturday" {
		t.Errorf("lost %v, want before-saturday alone", lost)
	}
}

// A deadline at or past the horizon is not judged, even when a start
// before the horizon could not meet it.
func TestExpiriesAheadHorizon(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "UTC", []string{"Sat"}, "02:00", "06:00"))
	sat := at(t, "UTC", "2026-12-05 02:00")
	claims := []Due{{Name: "past-the-horizon", Trigger: sat.Add(-time.Hour), Deadline: sat.Add(10 * time.Minute)}}
	if lost := cal.ExpiriesAhead([]time.Time{sat.Add(-time.Hour)}, claims, Timing{}, 15*time.Minute, sat.Add(5*time.Minute)); len(lost) != 0 {
		t.Errorf("lost %v: its deadline lies past the horizon", lost)
	}
	if lost := cal.ExpiriesAhead([]time.Time{sat.Add(-time.Hour)}, claims, Timing{}, 15*time.Minute, sat.Add(time.Hour)); len(lost) != 1 {
		t.Errorf("lost %v: within the horizon, a start at 02:00 cannot end by 02:10", lost)
	}
}
