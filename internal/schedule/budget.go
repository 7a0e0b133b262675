package schedule

import "time"

// BudgetSpan is a stretch over which a pool's NodePool budgets allow
// Allowed disruptions at once, Budget naming the one that sets it: the
// forecast's reading of the budgets (docs/design.md#budget-forecast).
type BudgetSpan struct {
	Start, End time.Time
	Allowed    int
	Budget     string
}

// BudgetLimit is the strictest allowance of the budget spans that overlap
// a cycle's occurrences: the most rotations the pool can run at once in
// its windows.
type BudgetLimit struct {
	Allowed int    `json:"allowed"`
	Budget  string `json:"budget"`
}

// Closed is every span whose budget allows no disruption: the stretches
// the forecast cuts out of the windows (Calendar.Without).
func Closed(spans []BudgetSpan) []Interval {
	var out []Interval
	for _, s := range spans {
		if s.Allowed <= 0 {
			out = append(out, Interval{Start: s.Start, End: s.End})
		}
	}
	return out
}

// LimitOver is the strictest allowance above 0 among the spans that
// overlap an occurrence (the zero ones are cut out of them); nil when no
// span does.
func LimitOver(spans []BudgetSpan, occ []Interval) *BudgetLimit {
	var l *BudgetLimit
	for _, s := range spans {
		if s.Allowed <= 0 || (l != nil && s.Allowed >= l.Allowed) {
			continue
		}
		for _, o := range occ {
			if s.Start.Before(o.End) && s.End.After(o.Start) {
				l = &BudgetLimit{Allowed: s.Allowed, Budget: s.Budget}
				break
			}
		}
	}
	return l
}

// ClosedBy names the budgets of the zero spans that overlap an
// occurrence, each once, in order.
func ClosedBy(spans []BudgetSpan, occ []Interval) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range spans {
		if s.Allowed > 0 || seen[s.Budget] {
			continue
		}
		for _, o := range occ {
			if s.Start.Before(o.End) && s.End.After(o.Start) {
				seen[s.Budget] = true
				out = append(out, s.Budget)
				break
			}
		}
	}
	return out
}
