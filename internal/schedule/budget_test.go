package schedule

import (
	"strings"
	"testing"
)

// A closed stretch is cut out of every occurrence it overlaps: from the
// middle (two pieces), an end, or the whole occurrence; the others stay.
func TestCalendarWithoutCutsClosedStretches(t *testing.T) {
	cal := NewCalendar(mustEntry(t, "UTC", []string{"Mon", "Tue", "Wed"}, "01:00", "05:00"))
	closed := []Interval{
		{Start: at(t, "UTC", "2026-12-07 02:00"), End: at(t, "UTC", "2026-12-07 03:00")}, // Mon's middle
		{Start: at(t, "UTC", "2026-12-08 04:00"), End: at(t, "UTC", "2026-12-08 09:00")}, // Tue's end
		{Start: at(t, "UTC", "2026-12-09 00:00"), End: at(t, "UTC", "2026-12-09 06:00")}, // all of Wed
	}
	var got []string
	for _, o := range cal.Without(closed).Occurrences(at(t, "UTC", "2026-12-07 00:00"), at(t, "UTC", "2026-12-14 00:00")) {
		got = append(got, o.Start.Format("Mon 15:04")+"–"+o.End.Format("15:04"))
	}
	want := "Mon 01:00–02:00 Mon 03:00–05:00 Tue 01:00–04:00" // Wed is gone
	if strings.Join(got, " ") != want {
		t.Errorf("occurrences %v\nwant %s", got, want)
	}
	if n := len(cal.Occurrences(at(t, "UTC", "2026-12-07 00:00"), at(t, "UTC", "2026-12-14 00:00"))); n != 3 {
		t.Errorf("the calendar itself lost occurrences: %d", n)
	}
}

// The limit is the strictest allowance above 0 among the spans that meet
// an occurrence; a span outside every occurrence does not bound it.
func TestLimitOverAndClosedBy(t *testing.T) {
	occ := []Interval{{Start: at(t, "UTC", "2026-12-07 01:00"), End: at(t, "UTC", "2026-12-07 05:00")}}
	spans := []BudgetSpan{
		{Start: at(t, "UTC", "2026-12-07 00:00"), End: at(t, "UTC", "2026-12-07 02:00"), Allowed: 25, Budget: "nodes=5%"},
		{Start: at(t, "UTC", "2026-12-07 02:00"), End: at(t, "UTC", "2026-12-07 03:00"), Allowed: 0, Budget: "nodes=0"},
		{Start: at(t, "UTC", "2026-12-07 03:00"), End: at(t, "UTC", "2026-12-07 09:00"), Allowed: 7, Budget: "nodes=7"},
		{Start: at(t, "UTC", "2026-12-07 09:00"), End: at(t, "UTC", "2026-12-07 17:00"), Allowed: 2, Budget: "nodes=2"},
		{Start: at(t, "UTC", "2026-12-07 17:00"), End: at(t, "UTC", "2026-12-07 18:00"), Allowed: 0, Budget: "nodes=0 late"},
	}
	if l := LimitOver(spans, occ); l == nil || *l != (BudgetLimit{Allowed: 7, Budget: "nodes=7"}) {
		t.Errorf("limit %+v, want 7 of nodes=7 (nodes=2 is outside the window)", l)
	}
	if l := LimitOver(spans[1:2], occ); l != nil {
		t.Errorf("a zero span alone is no limit (it is cut out): %+v", l)
	}
	if c := ClosedBy(spans, occ); strings.Join(c, "|") != "nodes=0" {
		t.Errorf("closed by %v", c)
	}
	if c := Closed(spans); len(c) != 2 || !c[0].Start.Equal(spans[1].Start) || !c[1].End.Equal(spans[4].End) {
		t.Errorf("closed %v", c)
	}
}

// The budget holds the number in force below what the policy resolves to,
// and says so; a budget above it changes nothing.
func TestResolveHeldByTheBudget(t *testing.T) {
	in, cy := fleetPool(t)
	pop := Population{Nodes: 300, Burst: 40}
	c := Concurrency{Auto: true, Cap: Amount{Percent: 10}}
	if f := c.Resolve(in, cy, pop); f.N != 6 || f.Budget != "" {
		t.Fatalf("unbudgeted: %+v", f)
	}
	in.Budget = &BudgetLimit{Allowed: 3, Budget: "nodes=1%"}
	f := c.Resolve(in, cy, pop)
	if f.N != 3 || f.Needed != 6 || f.Budget != "nodes=1%" || !strings.HasSuffix(f.Why, "; held at 3 by NodePool budget nodes=1%") {
		t.Errorf("held: %+v", f)
	}
	in.MaxUnavailable = f.N
	cov := CoverageOf(in, Derive(in, cy), pop, f.Needed)
	if cov.Covered || cov.HeldBy != "nodes=1%" || !strings.Contains(cov.Sentence(), "a NodePool budget that allows 6") || strings.Contains(cov.Sentence(), "maxUnavailable 6") {
		t.Errorf("coverage %+v: %s", cov, cov.Sentence())
	}
	in.Budget = &BudgetLimit{Allowed: 30, Budget: "nodes=10%"}
	if f := c.Resolve(in, cy, pop); f.N != 6 || f.Budget != "" {
		t.Errorf("a budget above the need: %+v", f)
	}
	in.Budget = &BudgetLimit{Allowed: 2, Budget: "nodes=2"}
	if f := (Concurrency{Amount: Amount{Count: 4}}).Resolve(in, cy, pop); f.N != 2 {
		t.Errorf("a count above the budget: %+v", f)
	}
}

func TestSentenceOfEveryOccurrenceClosed(t *testing.T) {
	c := Coverage{Applies: true, Reason: BudgetClosesEveryOccurrence, ClosedBy: []string{`nodes=0 (schedule "0 1 * * *" for 8h)`}}
	if s := c.Sentence(); !strings.HasPrefix(s, `not covered: NodePool budget nodes=0 (schedule "0 1 * * *" for 8h) allows no disruption in any window occurrence`) {
		t.Errorf("%s", s)
	}
}
