package simulate

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/plan"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

var monday = time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)

func loadPolicies(t testing.TB, files ...string) []v1alpha1.RotationPolicy {
	t.Helper()
	var out []v1alpha1.RotationPolicy
	for _, f := range files {
		p, err := plan.LoadPolicies("../../docs/examples/" + f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p...)
	}
	return out
}

func run(t testing.TB, f Fleet, pols []v1alpha1.RotationPolicy, seed uint64) *Result {
	t.Helper()
	r, err := Run(t.Context(), Input{Fleet: f, Policies: pols, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// estimated is a pool whose launch, boot and drain take exactly the
// policy's estimates, so its rotations take t_rot_est as plan assumes.
func estimated(t *testing.T, name string, labels map[string]string, pol v1alpha1.RotationPolicy, nodes int, age time.Duration) Pool {
	t.Helper()
	p := Pool{Name: name, Labels: labels, Nodes: nodes, ExpireAfter: "14d", TerminationGracePeriod: Duration{time.Hour}, Age: Range{age, age}}
	s, err := policy.Resolve(pol.Spec)
	if err != nil {
		t.Fatal(err)
	}
	_, d := s.Derive(nodePool(p), monday)
	p.Launch = Range{d.ProvisioningEstimate / 2, d.ProvisioningEstimate / 2}
	p.Boot = p.Launch
	p.Drain = Range{d.DrainEstimate, d.DrainEstimate}
	return p
}

// For each windowed example policy, a pool of (G+1)·C nodes that all
// reach the age threshold A together rotates as plan says: no claim starts
// before A; the first starts fall in the first occurrence after the claims
// reach A; every occurrence while the backlog lasts takes C starts (±1 for
// a start on an edge) and none is skipped, so no gap between them exceeds
// P; and, as plan's ThroughputBurstShortfall finding guarantees, at least
// G·C of the nodes sharing one deadline rotate before it.
func TestExamplePoliciesReproducePlanFigures(t *testing.T) {
	cases := []struct {
		file, policy string
		labels       map[string]string
	}{
		{"api-policy.yaml", "api", map[string]string{"workload": "api"}},
		{"eks-auto-mode.yaml", "auto-mode-general", map[string]string{"noderotation.io/policy": "eks-auto-mode"}},
		{"several-pools.yaml", "catch-all", map[string]string{}},
		{"several-pools.yaml", "web", map[string]string{"tier": "web"}},
		{"several-pools.yaml", "payments", map[string]string{"tier": "web", "team": "payments"}},
	}
	for _, c := range cases {
		t.Run(c.policy, func(t *testing.T) {
			pols, d := examplePolicy(t, c.file, c.policy, c.labels)
			// plan's C is per rotation slot: the figures are checked one
			// rotation at a time, whatever the example's maxUnavailable
			// (the default, auto, is checked by the throughput benchmark)
			for i := range pols {
				pols[i].Spec.Surge.MaxUnavailable = ptr.To(intstr.FromInt32(1))
			}
			// Every node reaches A one hour after the start.
			pool := estimated(t, "pool", c.labels, policyNamed(pols, c.policy), (d.G+1)*d.C, d.A-time.Hour)
			r := run(t, Fleet{Start: monday, Span: Duration{12 * 24 * time.Hour}, Pools: []Pool{pool}}, pols, 1)
			sum, occ := r.Pools[0].Summary, r.Pools[0].Occurrences
			if sum.Started == 0 || sum.YoungestAtStart < d.A {
				t.Fatalf("youngest claim at its first start: %s (of %d started); no claim may start before A = %s", sum.YoungestAtStart, sum.Started, d.A)
			}
			// The backlog is the original nodes (the first lanes); the
			// nodes that replace them reach A a generation later.
			per := make([]int, len(occ))
			for _, l := range r.Pools[0].Lanes[:pool.Nodes] {
				for _, st := range l.Starts {
					per[slices.IndexFunc(occ, func(o schedule.Interval) bool { return o.Contains(st) })]++
				}
			}
			reachA := monday.Add(time.Hour)
			first := slices.IndexFunc(occ, func(o schedule.Interval) bool { return o.End.After(reachA) })
			if first < 0 || per[first] == 0 {
				t.Fatalf("the first occurrence after the claims reach A started nothing: %v", per)
			}
			last := first
			for i := first; i < len(occ); i++ {
				if per[i] > 0 {
					last = i
				}
			}
			for i := first; i <= last; i++ {
				n := per[i]
				if n > d.C+1 || (i < last && n < d.C-1) {
					t.Errorf("occurrence %s: %d starts, plan's C = %d (all: %v)", occ[i].Start, n, d.C, per[first:last+1])
				}
				if i > first && occ[i].Start.Sub(occ[i-1].Start) > d.Cycle.P {
					t.Errorf("occurrences %s and %s are %s apart, more than plan's P = %s", occ[i-1].Start, occ[i].Start, occ[i].Start.Sub(occ[i-1].Start), d.Cycle.P)
				}
			}
			short := max(pool.Nodes-d.G*d.C, 0)
			if sum.ForceExpired > short+1 || sum.RotationFailures != 0 {
				t.Errorf("force-expired %d, failed %d; plan: %d nodes share a deadline and G·C = %d·%d rotate before it", sum.ForceExpired, sum.RotationFailures, pool.Nodes, d.G, d.C)
			}
		})
	}
}

// Open around the clock, a claim starts within the backstop minute after
// it reaches A: a claim is due strictly after its trigger.
func TestAlwaysOpenStartsAtA(t *testing.T) {
	labels := map[string]string{"workload": "batch"}
	pols, d := examplePolicy(t, "always-open.yaml", "batch-workers", labels)
	pool := estimated(t, "batch", labels, policyNamed(pols, "batch-workers"), 1, d.A-time.Hour)
	r := run(t, Fleet{Start: monday, Span: Duration{2 * time.Hour}, Pools: []Pool{pool}}, pols, 1)
	l := r.Pools[0].Lanes[0]
	reachA := monday.Add(time.Hour)
	if len(l.Starts) == 0 || l.Starts[0].Before(reachA) || l.Starts[0].Sub(reachA) > 61*time.Second {
		t.Fatalf("starts %v; want the first within a minute after A at %s", l.Starts, reachA)
	}
}

// A claim whose trigger falls 30 s after its window opens: the pass at the
// window's edge requeues to the trigger, the pass at the trigger finds it
// not yet due, and the backstop pass a minute later starts it — the
// simulator must keep that pass, not sleep to the window's close.
func TestTriggerJustAfterTheWindowOpens(t *testing.T) {
	pol := v1alpha1.RotationPolicy{ObjectMeta: metaName("night"), Spec: v1alpha1.RotationPolicySpec{
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}, Start: "01:00", End: "05:00"}},
	}}
	p := Pool{Name: "pool", Nodes: 1, ExpireAfter: "14d", TerminationGracePeriod: Duration{time.Hour}}
	s, err := policy.Resolve(pol.Spec)
	if err != nil {
		t.Fatal(err)
	}
	_, d := s.Derive(nodePool(p), monday)
	trigger := monday.Add(time.Hour + 30*time.Second)
	age := d.A - trigger.Sub(monday)
	p.Age = Range{age, age}
	r := run(t, Fleet{Start: monday, Span: Duration{6 * time.Hour}, Pools: []Pool{p}}, []v1alpha1.RotationPolicy{pol}, 1)
	l := r.Pools[0].Lanes[0]
	if len(l.Starts) == 0 || l.Starts[0].Sub(trigger) > 61*time.Second {
		t.Fatalf("starts %v; want one within a minute after the trigger %s", l.Starts, trigger)
	}
}

func examplePolicy(t *testing.T, file, name string, labels map[string]string) ([]v1alpha1.RotationPolicy, schedule.Derivation) {
	t.Helper()
	pols := loadPolicies(t, file)
	s, err := policy.Resolve(policyNamed(pols, name).Spec)
	if err != nil {
		t.Fatal(err)
	}
	_, d := s.Derive(nodePool(Pool{Name: "probe", Labels: labels, ExpireAfter: "14d", TerminationGracePeriod: Duration{time.Hour}}), monday)
	return pols, d
}

func policyNamed(pols []v1alpha1.RotationPolicy, name string) v1alpha1.RotationPolicy {
	for _, p := range pols {
		if p.Name == name {
			return p
		}
	}
	panic("no policy " + name)
}

// sundayHour opens one hour a week: with expireAfter 3d, plan finds the
// policy infeasible (NoGuaranteedChance) and the simulation finds the
// force-expiries that implies.
func sundayHour() v1alpha1.RotationPolicy {
	return v1alpha1.RotationPolicy{
		ObjectMeta: metaName("sunday"),
		Spec: v1alpha1.RotationPolicySpec{
			MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Sun"}, Start: "03:00", End: "04:00"}},
		},
	}
}

func TestInfeasiblePolicyForceExpires(t *testing.T) {
	pol := sundayHour()
	e := 72 * time.Hour
	rep, err := plan.Build(plan.Input{Policy: pol, ExpireAfter: &e, Now: monday})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Fatal {
		t.Fatalf("plan should find the policy infeasible: %+v", rep.Findings)
	}
	f := Fleet{Start: monday, Span: Duration{14 * 24 * time.Hour}, Pools: []Pool{{Name: "pool", Nodes: 6, ExpireAfter: "3d", Age: Range{0, 60 * time.Hour}}}}
	r := run(t, f, []v1alpha1.RotationPolicy{pol}, 1)
	s := r.Pools[0].Summary
	if s.ForceExpired == 0 || r.Total.ForceExpired != s.ForceExpired {
		t.Fatalf("force-expired %d (total %d): an infeasible policy must let Karpenter expire nodes", s.ForceExpired, r.Total.ForceExpired)
	}
	if s.Rotations != 0 || s.Attempts != 0 {
		t.Errorf("rotated %d, started %d: an infeasible pool is held, nothing starts", s.Rotations, s.Attempts)
	}
	// Every claim whose deadline falls inside the span is expired by
	// Karpenter: exactly those.
	due := 0
	for _, l := range r.Pools[0].Lanes {
		if !l.Deadline.After(r.End) {
			due++
		}
	}
	if s.ForceExpired != due {
		t.Errorf("force-expired %d, but %d claims reached their deadline in the span", s.ForceExpired, due)
	}
}

func TestRunsAreDeterministicPerSeed(t *testing.T) {
	pols := loadPolicies(t, "api-policy.yaml")
	f := Fleet{Start: monday, Span: Duration{8 * 24 * time.Hour}, Pools: []Pool{{Name: "api", Labels: map[string]string{"workload": "api"}, Nodes: 12,
		ExpireAfter: "14d", TerminationGracePeriod: Duration{time.Hour}, Age: Range{5 * 24 * time.Hour, 13 * 24 * time.Hour},
		LaunchFailureRate: 0.2, StuckDrainRate: 0.1}}}
	a, b, c := run(t, f, pols, 7), run(t, f, pols, 7), run(t, f, pols, 8)
	if !reflect.DeepEqual(a, b) {
		t.Error("two runs with seed 7 differ")
	}
	if reflect.DeepEqual(a.Pools[0].Lanes, c.Pools[0].Lanes) {
		t.Error("seeds 7 and 8 drew the same timings")
	}
	if a.Pools[0].Summary.Rotations == 0 {
		t.Error("nothing rotated: the comparison would be empty")
	}
}

// A pool Karpenter cannot serve: every attempt waits out readyTimeout and
// rolls back through the controller's failure path. Without the forceful
// fallback no rotation completes; with it (always-open.yaml enables it)
// the retried claims are rotated without a surge node.
func TestSurgeKarpenterCannotServe(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		pols := loadPolicies(t, "always-open.yaml")
		pols[0].Spec.Surge.ForcefulFallback.Enabled = fallback
		f := Fleet{Start: monday, Span: Duration{2 * 24 * time.Hour}, Pools: []Pool{{Name: "batch", Labels: map[string]string{"workload": "batch"}, Nodes: 3,
			ExpireAfter: "7d", Age: Range{7*24*time.Hour - 20*time.Hour, 7*24*time.Hour - 20*time.Hour}, NeverLaunch: true}}}
		s := run(t, f, pols, 1).Pools[0].Summary
		if s.RotationFailures == 0 || s.LaunchFailures == 0 || s.ExtraSurge == 0 {
			t.Errorf("fallback %v: failed %d, launch failures %d, extra surge %d: want surge attempts that failed", fallback, s.RotationFailures, s.LaunchFailures, s.ExtraSurge)
		}
		if !fallback && s.Attempts < 2 {
			t.Errorf("%d attempts: a failed claim is retried with a surge after its backoff", s.Attempts)
		}
		// Every rotation, the surge-less ones too, and every failure began
		// with a start.
		if s.Attempts < s.Rotations+s.RotationFailures {
			t.Errorf("fallback %v: %d attempts for %d rotations and %d failures", fallback, s.Attempts, s.Rotations, s.RotationFailures)
		}
		if rotated := s.Rotations > 0; rotated != fallback {
			t.Errorf("fallback %v: rotated %d", fallback, s.Rotations)
		}
	}
}

func TestReportDrawsWindowsLanesAndMargins(t *testing.T) {
	pols := loadPolicies(t, "api-policy.yaml")
	f := Fleet{Start: monday, Span: Duration{8 * 24 * time.Hour}, Pools: []Pool{{Name: "api", Labels: map[string]string{"workload": "api"}, Nodes: 8,
		ExpireAfter: "14d", TerminationGracePeriod: Duration{time.Hour}, Age: Range{6 * 24 * time.Hour, 13 * 24 * time.Hour}}}}
	r := run(t, f, pols, 1)
	var buf bytes.Buffer
	if err := RenderReport(&buf, r); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	p := r.Pools[0]
	inSpan := 0
	for _, o := range p.Occurrences {
		if o.End.After(r.Start) && o.Start.Before(r.End) {
			inSpan++
		}
	}
	rotated, deadlines := 0, 0
	for _, l := range p.Lanes {
		if l.End == EndRotated {
			rotated++
		}
		if !l.Deadline.IsZero() && !l.Deadline.Before(r.Start) && !l.Deadline.After(r.End) {
			deadlines++
		}
	}
	// The histogram's bars hold every rotated claim's margin.
	binned := 0
	for _, b := range reportView(r).Pools[0].Hist {
		binned += b.N
	}
	if binned != rotated {
		t.Errorf("histogram holds %d margins, %d claims were rotated", binned, rotated)
	}
	for what, want := range map[string]int{
		`<rect class="window"`:       inSpan,
		`<line class="lane `:         len(p.Lanes),
		`<line class="lane rotated"`: rotated,
		`<circle class="start"`:      p.Summary.Attempts,
		`<rect class="deadline"`:     deadlines,
		`<rect class="bar"`:          histBins,
	} {
		if got := strings.Count(html, what); got != want || want == 0 {
			t.Errorf("%s: %d in the report, want %d (and some)", what, got, want)
		}
	}
	var text bytes.Buffer
	if err := RenderSummary(&text, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "api       api     8") {
		t.Errorf("summary row missing:\n%s", text.String())
	}
}

func BenchmarkSimulate500Nodes10Pools4Weeks(b *testing.B) {
	pols := loadPolicies(b, "api-policy.yaml", "eks-auto-mode.yaml", "always-open.yaml", "several-pools.yaml")
	f, err := LoadFleet("testdata/fleet-500.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		r := run(b, f, pols, 1)
		b.ReportMetric(float64(r.Total.Rotations), "rotations")
		b.ReportMetric(float64(r.Total.Passes), "passes")
	}
}

func metaName(n string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: n} }

// The 300-node pool of docs/design.md#throughput over 8 weeks, one
// rotation at a time and maxUnavailable auto: how many nodes Karpenter
// force-expires, and the N auto picked (docs/performance.md).
func BenchmarkSimulate300NodesThroughput8Weeks(b *testing.B) {
	f, err := LoadFleet("testdata/fleet-300.yaml")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []string{"1", "auto"} {
		pols, err := plan.LoadPolicies("testdata/policy-300-" + n + ".yaml")
		if err != nil {
			b.Fatal(err)
		}
		b.Run("maxUnavailable="+n, func(b *testing.B) {
			for b.Loop() {
				r := run(b, f, pols, 1)
				b.ReportMetric(float64(r.Total.ForceExpired), "force-expired")
				b.ReportMetric(float64(r.Total.Rotations), "rotations")
				b.ReportMetric(float64(r.Pools[0].Summary.Plan.N), "N")
			}
		})
	}
}

// The fleet file's budgets are the simulated NodePool's: the controller's
// start gate holds every start under a zero budget always in force, the
// summary's coverage line names it, and a budget Karpenter cannot read is
// refused with the file. With the default budget (10%) the same pool
// rotates.
func TestFleetBudgetsBoundTheRun(t *testing.T) {
	labels := map[string]string{"workload": "batch"}
	pols, d := examplePolicy(t, "always-open.yaml", "batch-workers", labels)
	pool := estimated(t, "batch", labels, policyNamed(pols, "batch-workers"), 4, d.A-time.Hour)
	fleet := func(b *[]karpv1.Budget) Fleet {
		p := pool
		p.Budgets = b
		return Fleet{Start: monday, Span: Duration{6 * time.Hour}, Pools: []Pool{p}}
	}
	if r := run(t, fleet(nil), pols, 1); r.Pools[0].Summary.Rotations == 0 {
		t.Fatalf("Karpenter's default budget: nothing rotated")
	}
	r := run(t, fleet(&[]karpv1.Budget{{Nodes: "0"}}), pols, 1)
	if s := r.Pools[0].Summary; s.Rotations != 0 || s.Attempts != 0 || s.Events["DisruptionBudget"] == 0 {
		t.Errorf("a zero budget: %d rotated, %d started, events %v", s.Rotations, s.Attempts, s.Events)
	}
	var out bytes.Buffer
	if err := RenderSummary(&out, r); err != nil || !strings.Contains(out.String(), "batch: not covered: NodePool budget nodes=0 allows no disruption in any window occurrence") {
		t.Errorf("summary (%v):\n%s", err, out.String())
	}
	bad := fleet(&[]karpv1.Budget{{Nodes: "ten"}})
	if err := bad.check(); err == nil || !strings.Contains(err.Error(), `budgets[0]: nodes "ten"`) {
		t.Errorf("an unreadable budget: %v", err)
	}
}
