package budget

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/utils/clock"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Unbounded is the allowance of a pool no budget bounds now (Karpenter's
// own value for it).
const Unbounded = math.MaxInt32

// Allowance is how many of a pool's nodes its budgets let be disrupted at
// once now.
type Allowance struct {
	// Allowed is the strictest allowance of the budgets in force, whatever
	// their reasons; Unbounded when none is in force.
	Allowed int
	// Budget is the budget that sets Allowed, as a reviewer would read it
	// ("nodes=0, schedule \"0 9 * * 1-5\" for 8h"); empty when none does.
	Budget string
	// Until is when that budget stops being in force; zero when it has no
	// schedule (always in force) or its occurrences overlap past the
	// lookahead.
	Until time.Time
	// Err names the budgets Karpenter cannot read (a schedule or a nodes
	// value its validation let through): each counts as 0, as Karpenter
	// fails closed on them.
	Err error
}

// Holds reports whether the allowance leaves no room for another
// disruption beside the disrupted ones.
func (a Allowance) Holds(disrupted int) bool { return disrupted >= a.Allowed }

// String says the binding budget and its end the way the gate reason,
// status and explain show it: `NodePool budget nodes=0 (schedule "0 9 * *
// 1-5" for 8h, until 17:00 UTC)`.
func (a Allowance) String() string {
	if a.Budget == "" {
		return "no NodePool budget in force"
	}
	s := "NodePool budget " + a.Budget
	if !a.Until.IsZero() {
		s += ", until " + a.Until.UTC().Format("2006-01-02 15:04 UTC")
	}
	return s
}

// Of is the allowance of the pool's budgets at now for a pool of nodes
// nodes as Karpenter counts them (Count.Nodes). A rotation is a voluntary,
// gracefully drained delete that Karpenter's reasons (Underutilized,
// Empty, Drifted) do not name, so every budget applies to it, whatever
// reasons it lists: the strictest in force binds
// (docs/design.md#disruption-budget).
func Of(np *karpv1.NodePool, nodes int, now time.Time) Allowance {
	a := Allowance{Allowed: Unbounded}
	clk := fixed{t: now}
	var errs []error
	for i := range np.Spec.Disruption.Budgets {
		b := &np.Spec.Disruption.Budgets[i]
		// Karpenter's own rule: the schedule walked back by the duration,
		// a percentage of the counted nodes rounded up
		n, err := b.GetAllowedDisruptions(clk, nodes)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.disruption.budgets[%d] (%s): %w", i, Describe(b), err))
		}
		end := until(b, now)
		// of two budgets allowing as few, the one in force longer says
		// how long the hold lasts
		if n < a.Allowed || (n == a.Allowed && a.Budget != "" && later(end, a.Until)) {
			a.Allowed, a.Budget, a.Until = n, Describe(b), end
		}
	}
	a.Err = errors.Join(errs...)
	return a
}

// later: end is later than than, a zero end (no end) latest of all.
func later(end, than time.Time) bool {
	switch {
	case end.IsZero():
		return !than.IsZero()
	case than.IsZero():
		return false
	}
	return end.After(than)
}

// Describe names a budget by its fields, as the gate reason, plan and
// status show it.
func Describe(b *karpv1.Budget) string {
	s := "nodes=" + b.Nodes
	var more []string
	if b.Schedule != nil {
		d := ""
		if b.Duration != nil {
			d = " for " + short(b.Duration.Duration)
		}
		more = append(more, fmt.Sprintf("schedule %q%s", *b.Schedule, d))
	}
	if len(b.Reasons) > 0 {
		r := make([]string, len(b.Reasons))
		for i, x := range b.Reasons {
			r[i] = string(x)
		}
		more = append(more, "reasons "+strings.Join(r, ","))
	}
	if len(more) > 0 {
		s += " (" + strings.Join(more, ", ") + ")"
	}
	return s
}

// short is a duration as a budget's author writes it: 8h, 1h30m, 30m,
// 30s (the zero minutes and seconds of Go's 8h0m0s dropped).
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") || strings.HasSuffix(s, "h0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// lookahead bounds the walk over a schedule's overlapping occurrences: a
// budget in force for longer than this from now is reported without an
// end.
const lookahead = 1000

// until is when a budget in force at now stops being in force: the end
// of the occurrence that covers now, extended by every later occurrence
// that starts before it ends (Karpenter's IsActive is true while any
// occurrence began within the last duration). Zero for a budget without
// a schedule, one not in force, or one whose occurrences chain past the
// lookahead.
func until(b *karpv1.Budget, now time.Time) time.Time {
	if b.Schedule == nil || b.Duration == nil {
		return time.Time{}
	}
	sched, err := cron.ParseStandard("TZ=UTC " + *b.Schedule)
	if err != nil {
		return time.Time{}
	}
	d := b.Duration.Duration
	start := sched.Next(now.UTC().Add(-d))
	if start.After(now.UTC()) {
		return time.Time{}
	}
	end := start.Add(d)
	for range lookahead {
		next := sched.Next(start)
		if next.After(end) {
			return end
		}
		start, end = next, next.Add(d)
	}
	return time.Time{}
}

// fixed is the pass's instant as the clock Karpenter's budget code reads.
type fixed struct {
	clock.RealClock
	t time.Time
}

func (f fixed) Now() time.Time                  { return f.t }
func (f fixed) Since(t time.Time) time.Duration { return f.t.Sub(t) }

// Why says what holds a start: the budget and its end, or the number of
// rotations in force, and the claims being disrupted — the sentence the
// DisruptionBudget announcement, status and explain share.
func Why(a Allowance, disrupted []string, inForce int) string {
	names := strings.Join(disrupted, ", ")
	if len(disrupted) == 0 {
		names = "none"
	}
	if a.Holds(len(disrupted)) {
		return fmt.Sprintf("%s allows %d disrupted at once; %d disrupted now (%s)", a, a.Allowed, len(disrupted), names)
	}
	return fmt.Sprintf("%d of the pool's claims are disrupted now (%s), as many as the %d rotations in force: Karpenter's disruptions count against them", len(disrupted), names, inForce)
}
