package budget

import (
	"fmt"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Span is one stretch of time over which a pool's allowance does not
// change: the forecast's reading of the budgets (plan, the policy's
// Feasible condition, status; docs/design.md#budget-forecast).
type Span struct {
	Start, End time.Time
	// Allowed and Budget are Of's at any instant of the span.
	Allowed int
	Budget  string
}

// maxChanges bounds the occurrences walked of one schedule: a schedule
// that starts more often than this over the horizon (every few minutes
// for weeks) is read as always in force, the strictest reading.
const maxChanges = 4096

// Timeline is the pool's allowance over [from, to) for a pool of nodes
// nodes, as spans in order, neighbours of the same allowance and budget
// merged. Each budget's value is Karpenter's own GetAllowedDisruptions of
// it held always in force (its nodes, a percentage rounded up); it binds
// while one of its occurrences is in force — [start, start+duration), as
// Karpenter's IsActive reads the schedule in UTC — and the strictest
// binding budget sets the span's allowance, as Of does at each instant
// (the tests hold the two to each other).
func Timeline(np *karpv1.NodePool, nodes int, from, to time.Time) []Span {
	if !to.After(from) {
		return nil
	}
	budgets := np.Spec.Disruption.Budgets
	values := make([]int, len(budgets))
	active := make([][]interval, len(budgets)) // nil: always in force
	changes := []time.Time{from}
	for i := range budgets {
		b := budgets[i]
		occ, ok, bad := occurrences(&b, from, to)
		b.Schedule, b.Duration = nil, nil
		n, err := b.GetAllowedDisruptions(fixed{t: from}, nodes)
		if err != nil || bad {
			n = 0 // as Of: a budget Karpenter cannot read fails closed
		}
		values[i] = n
		if !ok {
			continue // too frequent to walk, or no schedule: always in force
		}
		active[i] = occ
		if occ == nil {
			active[i] = []interval{} // a schedule with no occurrence here: never
		}
		for _, o := range occ {
			changes = append(changes, o.start, o.end)
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Before(changes[j]) })
	var out []Span
	for i, t := range changes {
		if (i > 0 && !t.After(changes[i-1])) || t.Before(from) || !t.Before(to) {
			continue
		}
		allowed, name := Unbounded, ""
		for j := range budgets {
			if values[j] < allowed && inForce(active[j], t) {
				allowed, name = values[j], Describe(&budgets[j])
			}
		}
		if n := len(out); n > 0 && out[n-1].Allowed == allowed && out[n-1].Budget == name {
			continue
		}
		if n := len(out); n > 0 {
			out[n-1].End = t
		}
		out = append(out, Span{Start: t, Allowed: allowed, Budget: name})
	}
	out[len(out)-1].End = to
	return out
}

type interval struct{ start, end time.Time }

// inForce: t is in one of the intervals (in order, merged); nil is always.
func inForce(occ []interval, t time.Time) bool {
	if occ == nil {
		return true
	}
	i := sort.Search(len(occ), func(i int) bool { return occ[i].end.After(t) })
	return i < len(occ) && !occ[i].start.After(t)
}

// occurrences are a scheduled budget's stretches in force that meet
// [from, to), in order and merged where they overlap: each occurrence's
// start to a duration later. ok is false for a budget always in force: no
// schedule, one Karpenter cannot read (bad: Of counts it as 0 whenever it
// is asked), or more than maxChanges occurrences in the horizon.
func occurrences(b *karpv1.Budget, from, to time.Time) (occ []interval, ok, bad bool) {
	if b.Schedule == nil || b.Duration == nil {
		return nil, false, false
	}
	sched, err := cron.ParseStandard("TZ=UTC " + *b.Schedule)
	if err != nil {
		return nil, false, true
	}
	d := b.Duration.Duration
	var out []interval
	walked := 0
	for s := sched.Next(from.UTC().Add(-d)); !s.IsZero() && s.Before(to); s = sched.Next(s) {
		if walked++; walked > maxChanges {
			return nil, false, false
		}
		if n := len(out); n > 0 && !s.After(out[n-1].end) {
			out[n-1].end = s.Add(d)
			continue
		}
		out = append(out, interval{start: s, end: s.Add(d)})
	}
	return out, true, false
}

// Check reports what Karpenter cannot read of a budget, whenever it is
// asked: its nodes value (Karpenter's own GetAllowedDisruptions, the
// schedule held in force) and its schedule. For a fleet file, which the
// simulator refuses rather than fail closed on.
func Check(b karpv1.Budget) error {
	if b.Schedule != nil {
		if _, err := cron.ParseStandard("TZ=UTC " + *b.Schedule); err != nil {
			return fmt.Errorf("schedule %q: %w", *b.Schedule, err)
		}
	}
	b.Schedule, b.Duration = nil, nil
	if _, err := b.GetAllowedDisruptions(fixed{t: time.Time{}}, 1); err != nil {
		return fmt.Errorf("nodes %q: %w", b.Nodes, err)
	}
	return nil
}
