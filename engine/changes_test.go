package engine

import (
	"strings"
	"testing"
	"time"
)

// NextChange is the earliest declared instant ahead of now; an instant
// passed, an annotation unset or malformed gives none.
func TestNextChange(t *testing.T) {
	e, err := load(t, base)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	freeze := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		freeze string
		want   time.Time
	}{
		{"2026-12-01T00:00:00Z", freeze},
		{"2026-11-01T00:00:00Z", time.Time{}},
		{now.Format(time.RFC3339), time.Time{}}, // at now, not after it
		{"", time.Time{}},
		{"next tuesday", time.Time{}},
	} {
		s := &Snapshot{Now: now, Pool: PoolObservation{Freeze: c.freeze}}
		if got := e.NextChange(s); !got.Equal(c.want) {
			t.Errorf("freeze %q: next change %s, want %s", c.freeze, got, c.want)
		}
	}
	got, err := e.ChangesAt(&Snapshot{Now: now, Pool: PoolObservation{Freeze: "2026-12-01T00:00:00Z"}}, "frozen")
	if err != nil || len(got) != 1 || !got[0].Equal(freeze) {
		t.Errorf("ChangesAt(frozen) = %v, %v", got, err)
	}
	if _, err := e.ChangesAt(&Snapshot{}, "thawed"); err == nil {
		t.Error("ChangesAt of an unknown fact: no error")
	}
}

// The earliest instant of all the facts' wins, whichever fact declares it.
func TestNextChangeIsTheEarliestOfAllFacts(t *testing.T) {
	table := replaceOnce(t, base, `    expr: claim.deleting
`, `    expr: claim.deleting && now - claim.deletedAt > policy.drainBound
    changesAt: ['claim.deletedAt + policy.drainBound + duration("1ns")']
`)
	e, err := load(t, table)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s := &Snapshot{Now: now, Pool: PoolObservation{Freeze: "2026-11-30T13:00:00Z"},
		Claim:  ClaimObservation{Deleting: true, DeletedAt: now.Add(-time.Minute)},
		Policy: PolicyObservation{DrainBound: Duration(10 * time.Minute)}}
	if want := now.Add(9*time.Minute + time.Nanosecond); !e.NextChange(s).Equal(want) {
		t.Errorf("next change %s, want the drain bound's %s", e.NextChange(s), want)
	}
	s.Policy.DrainBound = Duration(2 * time.Hour)
	if want := now.Add(time.Hour); !e.NextChange(s).Equal(want) {
		t.Errorf("next change %s, want the freeze's %s", e.NextChange(s), want)
	}
}

func replaceOnce(t *testing.T, s, from, to string) string {
	t.Helper()
	if !strings.Contains(s, from) {
		t.Fatalf("test setup: %q not in the table", from)
	}
	return strings.Replace(s, from, to, 1)
}
