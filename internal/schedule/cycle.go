package schedule

import "time"

// Tick is the reconcile backstop; a union open 24/7 has P = Tick
// (docs/design.md#maintenance-windows).
const Tick = time.Minute

// Cycle holds the figures of one weekly cycle of the union, measured on the
// real calendar from a given instant over the occurrences of the coming
// week. DST may shift one gap by ±1h, which is accepted as an approximation
// of the wall-clock cycle (docs/design.md#maintenance-windows).
type Cycle struct {
	// HasOccurrence is false when no window ever opens (fatal NoWindows).
	HasOccurrence bool
	// AlwaysOpen is true when the union never closes.
	AlwaysOpen bool
	// P is the largest gap from one occurrence's start to the next's.
	P time.Duration
	// D is the shortest occurrence's duration (conservative for C).
	D time.Duration
	// Gap is the shortest closed interval between occurrences.
	Gap time.Duration
	// Occurrences of the measured week (the one open now, if any, and those
	// starting within seven days), in order.
	Occurrences []Interval
}

// Measure computes the cycle of the union as seen from now.
func (c Calendar) Measure(now time.Time) Cycle {
	if c.Empty() {
		return Cycle{}
	}
	if c.AlwaysOpen(now) {
		return Cycle{HasOccurrence: true, AlwaysOpen: true, P: Tick, D: week}
	}
	// The occurrences open now or starting within the week, then the first
	// one after them; three weeks always hold both, even when a DST gap
	// swallows a whole occurrence.
	all := c.Occurrences(now, now.Add(3*week))
	n := 0
	for n < len(all) && (n == 0 || all[n].Start.Before(now.Add(week))) {
		n++
	}
	if n == 0 {
		return Cycle{}
	}
	cy := Cycle{HasOccurrence: true, Occurrences: all[:n], D: all[0].Duration(), Gap: week, P: week}
	if n < len(all) {
		cy.P = 0
		for i := 0; i < n; i++ {
			cy.P = max(cy.P, all[i+1].Start.Sub(all[i].Start))
			cy.Gap = min(cy.Gap, all[i+1].Start.Sub(all[i].End))
		}
	}
	for _, o := range all[:n] {
		cy.D = min(cy.D, o.Duration())
	}
	return cy
}
