package policy

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// The forecast reads the NodePool's budgets over time when the policy
// honours them. A business-hours zero budget over a 24/7 window leaves the
// nights and weekends, but the controller derives the age threshold from
// the window (2m of chances before t_rot): a claim due at 09:00 waits
// until 17:00 and expires, and the verdict says so. Windows that close
// during business hours themselves are covered, the budget cut from
// nothing. Ignore reads none, and a pool of no nodes has nothing to cover
// whatever its budgets.
func TestCoverageReadsTheBudgets(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	e := 720 * time.Hour
	sched, d := "0 9 * * mon-fri", metav1.Duration{Duration: 8 * time.Hour}
	np := &karpv1.NodePool{}
	np.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "10%"}, {Nodes: "0", Schedule: &sched, Duration: &d}}
	spec := v1alpha1.RotationPolicySpec{MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}, Start: "00:00", End: "24:00"}}}
	coverage := func(spec v1alpha1.RotationPolicySpec, nodes int) schedule.Coverage {
		s, err := Resolve(spec)
		if err != nil {
			t.Fatal(err)
		}
		in, d := s.Derive(np, now)
		return s.Coverage(in, d.Cycle, np, schedule.Population{Nodes: nodes, Burst: nodes / 10}, now)
	}
	honoured := coverage(spec, 200)
	if honoured.Covered || honoured.Reason != schedule.BudgetOutlastsLead || honoured.Lead != 2*time.Minute || honoured.Period != 72*time.Hour ||
		!strings.Contains(honoured.Sentence(), `the windows less NodePool budget nodes=0 (schedule "0 9 * * mon-fri" for 8h) open only every 3d`) {
		t.Errorf("honoured: %+v\n%s", honoured, honoured.Sentence())
	}
	nights := spec
	nights.MaintenanceWindows = []v1alpha1.MaintenanceWindow{
		{Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri"}, Start: "17:00", End: "24:00"},
		{Timezone: "UTC", Days: []v1alpha1.Weekday{"Tue", "Wed", "Thu", "Fri", "Sat"}, Start: "00:00", End: "09:00"},
		{Timezone: "UTC", Days: []v1alpha1.Weekday{"Sat", "Sun"}, Start: "00:00", End: "24:00"},
	}
	if c := coverage(nights, 200); !c.Covered || len(c.ClosedBy) != 0 {
		t.Errorf("windows outside business hours: %+v\n%s", c, c.Sentence())
	}
	spec.Surge.NodePoolBudgets = v1alpha1.BudgetsIgnore
	if ignored := coverage(spec, 200); !ignored.Covered || len(ignored.ClosedBy) != 0 {
		t.Errorf("ignored: %+v", ignored)
	}
	spec.Surge.NodePoolBudgets = ""
	if none := coverage(spec, 0); none.Applies || !none.Covered {
		t.Errorf("no nodes: %+v", none)
	}
	// a pool with no deadline has nothing to cover, even under a zero
	// budget always in force
	np.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{}
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0"}}
	if never := coverage(spec, 200); never.Applies || !never.Covered {
		t.Errorf("expireAfter Never: %+v", never)
	}
	np.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
	if closed := coverage(spec, 200); closed.Covered || closed.Reason != schedule.BudgetClosesEveryOccurrence {
		t.Errorf("a zero budget always in force: %+v", closed)
	}
}

// The forecast's reading of the budgets runs in every governed pass (the
// coverage status, explain and the Feasible condition show):
// docs/performance.md#budget-forecast.
func BenchmarkCoverage(b *testing.B) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	e := 504 * time.Hour
	sched, d := "0 7 * * mon-fri", metav1.Duration{Duration: 10 * time.Hour}
	spec := v1alpha1.RotationPolicySpec{MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "Europe/Berlin", Days: []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri"}, Start: "01:00", End: "05:00"}}}
	s, err := Resolve(spec)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		budgets []karpv1.Budget
	}{
		{"no budget", nil},
		{"Karpenter's default 10%", []karpv1.Budget{{Nodes: "10%"}}},
		{"5% and business hours 0", []karpv1.Budget{{Nodes: "5%"}, {Nodes: "0", Schedule: &sched, Duration: &d}}},
	} {
		np := &karpv1.NodePool{}
		np.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
		np.Spec.Disruption.Budgets = c.budgets
		in, dv := s.Derive(np, now)
		pop := schedule.Population{Nodes: 500, Burst: 72}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if cov := s.Coverage(in, dv.Cycle, np, pop, now); !cov.Covered {
					b.Fatal(cov.Sentence())
				}
			}
		})
	}
}
