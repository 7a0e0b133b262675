package budget

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

func pool(budgets ...karpv1.Budget) *karpv1.NodePool {
	np := &karpv1.NodePool{}
	np.Spec.Disruption.Budgets = budgets
	return np
}

func scheduled(nodes, schedule, duration string, reasons ...karpv1.DisruptionReason) karpv1.Budget {
	d, err := time.ParseDuration(duration)
	if err != nil {
		panic(err)
	}
	return karpv1.Budget{Nodes: nodes, Schedule: &schedule, Duration: &metav1.Duration{Duration: d}, Reasons: reasons}
}

func at(s string) time.Time {
	t, err := time.Parse("Mon 2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

// The forms of Karpenter's documented budgets (karpenter.sh docs,
// Disruption → NodePool Disruption Budgets, v1.15), read by Karpenter's own
// Budget.GetAllowedDisruptions, plus what this package adds: the strictest
// over every reason, the budget that binds and when it ends.
func TestAllowance(t *testing.T) {
	business := scheduled("0", "0 9 * * mon-fri", "8h")
	for _, c := range []struct {
		name    string
		np      *karpv1.NodePool
		nodes   int
		now     string
		allowed int
		budget  string
		until   string // Mon 2006-01-02 15:04, empty for none
	}{
		{name: "no budget", np: pool(), nodes: 10, now: "Mon 2026-12-07 12:00", allowed: Unbounded},
		{name: "a count", np: pool(karpv1.Budget{Nodes: "5"}), nodes: 100, now: "Mon 2026-12-07 12:00", allowed: 5, budget: "nodes=5"},
		{name: "Karpenter's default 10% of 19 rounds up to 2", np: pool(karpv1.Budget{Nodes: "10%"}), nodes: 19, now: "Mon 2026-12-07 12:00", allowed: 2, budget: "nodes=10%"},
		{name: "10% of 10 is 1", np: pool(karpv1.Budget{Nodes: "10%"}), nodes: 10, now: "Mon 2026-12-07 12:00", allowed: 1, budget: "nodes=10%"},
		{name: "10% of 1 rounds up to 1", np: pool(karpv1.Budget{Nodes: "10%"}), nodes: 1, now: "Mon 2026-12-07 12:00", allowed: 1, budget: "nodes=10%"},
		{name: "10% of no counted node is 0", np: pool(karpv1.Budget{Nodes: "10%"}), nodes: 0, now: "Mon 2026-12-07 12:00", allowed: 0, budget: "nodes=10%"},
		{name: "business hours 0, in force", np: pool(business), nodes: 10, now: "Mon 2026-12-07 12:00", allowed: 0,
			budget: `nodes=0 (schedule "0 9 * * mon-fri" for 8h)`, until: "Mon 2026-12-07 17:00"},
		{name: "business hours 0, from its first minute", np: pool(business), nodes: 10, now: "Mon 2026-12-07 09:00", allowed: 0,
			budget: `nodes=0 (schedule "0 9 * * mon-fri" for 8h)`, until: "Mon 2026-12-07 17:00"},
		{name: "business hours 0, over at its end", np: pool(business), nodes: 10, now: "Mon 2026-12-07 17:00", allowed: Unbounded},
		{name: "business hours 0, not before it", np: pool(business), nodes: 10, now: "Mon 2026-12-07 08:59", allowed: Unbounded},
		{name: "business hours 0, not on a Saturday", np: pool(business), nodes: 10, now: "Sat 2026-12-12 12:00", allowed: Unbounded},
		{name: "a window across midnight, after it", np: pool(scheduled("1", "0 22 * * *", "4h")), nodes: 10, now: "Tue 2026-12-08 01:30", allowed: 1,
			budget: `nodes=1 (schedule "0 22 * * *" for 4h)`, until: "Tue 2026-12-08 02:00"},
		{name: "a window across midnight, before it", np: pool(scheduled("1", "0 22 * * *", "4h")), nodes: 10, now: "Mon 2026-12-07 23:00", allowed: 1,
			budget: `nodes=1 (schedule "0 22 * * *" for 4h)`, until: "Tue 2026-12-08 02:00"},
		{name: "a window across midnight, ended", np: pool(scheduled("1", "0 22 * * *", "4h")), nodes: 10, now: "Tue 2026-12-08 02:00", allowed: Unbounded},
		{name: "a macro", np: pool(scheduled("0", "@daily", "10m")), nodes: 10, now: "Tue 2026-12-08 00:05", allowed: 0,
			budget: `nodes=0 (schedule "@daily" for 10m)`, until: "Tue 2026-12-08 00:10"},
		{name: "occurrences that overlap end with the last", np: pool(scheduled("0", "0 9,10 * * *", "90m")), nodes: 10, now: "Mon 2026-12-07 09:30", allowed: 0,
			budget: `nodes=0 (schedule "0 9,10 * * *" for 1h30m)`, until: "Mon 2026-12-07 11:30"},
		{name: "occurrences that never stop overlapping have no end", np: pool(scheduled("0", "@hourly", "90m")), nodes: 10, now: "Mon 2026-12-07 09:30", allowed: 0,
			budget: `nodes=0 (schedule "@hourly" for 1h30m)`},
		{name: "a budget for another reason binds a rotation too", np: pool(karpv1.Budget{Nodes: "10%"}, scheduled("0", "0 9 * * mon-fri", "8h", karpv1.DisruptionReasonUnderutilized)),
			nodes: 10, now: "Mon 2026-12-07 12:00", allowed: 0, budget: `nodes=0 (schedule "0 9 * * mon-fri" for 8h, reasons Underutilized)`, until: "Mon 2026-12-07 17:00"},
		{name: "several budgets: the strictest in force", np: pool(karpv1.Budget{Nodes: "20%", Reasons: []karpv1.DisruptionReason{karpv1.DisruptionReasonEmpty, karpv1.DisruptionReasonDrifted}}, karpv1.Budget{Nodes: "5"}, scheduled("0", "@daily", "10m", karpv1.DisruptionReasonUnderutilized)),
			nodes: 19, now: "Mon 2026-12-07 12:00", allowed: 4, budget: "nodes=20% (reasons Empty,Drifted)"},
		{name: "two budgets allowing as few: the one in force longer", np: pool(scheduled("0", "0 9 * * *", "2h"), scheduled("0", "0 10 * * *", "4h")),
			nodes: 10, now: "Mon 2026-12-07 10:30", allowed: 0, budget: `nodes=0 (schedule "0 10 * * *" for 4h)`, until: "Mon 2026-12-07 14:00"},
		{name: "an unscheduled 0 outlasts a scheduled one", np: pool(scheduled("0", "0 9 * * *", "2h"), karpv1.Budget{Nodes: "0"}),
			nodes: 10, now: "Mon 2026-12-07 10:30", allowed: 0, budget: "nodes=0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := Of(c.np, c.nodes, at(c.now))
			if a.Err != nil {
				t.Fatalf("error %v", a.Err)
			}
			if a.Allowed != c.allowed || a.Budget != c.budget {
				t.Errorf("allowed %d by %q, want %d by %q", a.Allowed, a.Budget, c.allowed, c.budget)
			}
			want := time.Time{}
			if c.until != "" {
				want = at(c.until)
			}
			if !a.Until.Equal(want) {
				t.Errorf("until %v, want %v", a.Until, want)
			}
		})
	}
}

// A budget Karpenter cannot read counts as 0 (Karpenter fails closed) and
// is named in the error.
func TestAnUnreadableBudgetFailsClosed(t *testing.T) {
	a := Of(pool(karpv1.Budget{Nodes: "10%"}, scheduled("3", "not a schedule", "1h")), 10, at("Mon 2026-12-07 12:00"))
	if a.Allowed != 0 || a.Err == nil || !strings.Contains(a.Err.Error(), "spec.disruption.budgets[1]") {
		t.Errorf("allowed %d, error %v; want 0 and an error naming budgets[1]", a.Allowed, a.Err)
	}
}

func TestTheGateReasonNamesTheBudgetAndItsEnd(t *testing.T) {
	a := Of(pool(scheduled("0", "0 9 * * mon-fri", "8h")), 10, at("Mon 2026-12-07 12:00"))
	if got, want := a.String(), `NodePool budget nodes=0 (schedule "0 9 * * mon-fri" for 8h), until 2026-12-07 17:00 UTC`; got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
	if !a.Holds(0) {
		t.Error("a budget of 0 holds with nothing disrupted")
	}
	if a := Of(pool(karpv1.Budget{Nodes: "2"}), 10, at("Mon 2026-12-07 12:00")); a.Holds(1) || !a.Holds(2) {
		t.Error("a budget of 2 holds at 2 disrupted, not at 1")
	}
	if got := Of(pool(), 10, time.Now()).String(); got != "no NodePool budget in force" {
		t.Errorf("no budget: %q", got)
	}
}

func TestWhyNamesWhatBinds(t *testing.T) {
	now := at("Mon 2026-12-07 12:00")
	zero := Of(pool(scheduled("0", "0 9 * * mon-fri", "8h")), 10, now)
	if got, want := Why(zero, nil, 1), `NodePool budget nodes=0 (schedule "0 9 * * mon-fri" for 8h), until 2026-12-07 17:00 UTC allows 0 disrupted at once; 0 disrupted now (none)`; got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
	wide := Of(pool(karpv1.Budget{Nodes: "50%"}), 10, now)
	if got, want := Why(wide, []string{"a", "b"}, 2), "2 of the pool's claims are disrupted now (a, b), as many as the 2 rotations in force: Karpenter's disruptions count against them"; got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
}
