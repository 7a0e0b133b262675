package simulate

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/plan"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// For each windowed example policy, a pool of 3·C nodes that all reach the
// age threshold A together rotates as plan says: no claim starts before
// A, C starts fill each occurrence while the backlog lasts, and the first
// starts fall in the first occurrence after the claims reach A; and, as
// plan's ThroughputBurstShortfall finding guarantees, at least G·C of the
// nodes sharing one deadline rotate before it.
func TestExamplePoliciesReproducePlanFigures(t *testing.T) {
	cases := []struct {
		file, policy string
		labels       map[string]string
	}{
		{"api-policy.yaml", "api", map[string]string{"workload": "api"}},
		{"eks-auto-mode.yaml", "auto-mode-general", map[string]string{"karpenter.sh/nodepool-class": "general-purpose"}},
		{"several-pools.yaml", "catch-all", map[string]string{}},
		{"several-pools.yaml", "web", map[string]string{"tier": "web"}},
		{"several-pools.yaml", "payments", map[string]string{"tier": "web", "team": "payments"}},
	}
	for _, c := range cases {
		t.Run(c.policy, func(t *testing.T) {
			pols := loadPolicies(t, c.file)
			var pol v1alpha1.RotationPolicy
			for _, p := range pols {
				if p.Name == c.policy {
					pol = p
				}
			}
			probe := estimated(t, "pool", c.labels, pol, 1, 0)
			s, _ := policy.Resolve(pol.Spec)
			_, d := s.Derive(nodePool(probe), monday)
			// Every node reaches A one hour after the start.
			pool := estimated(t, "pool", c.labels, pol, 3*d.C, d.A-time.Hour)
			r := run(t, Fleet{Start: monday, Span: Duration{10 * 24 * time.Hour}, Pools: []Pool{pool}}, pols, 1)
			sum := r.Pools[0].Summary
			if sum.Policy != c.policy || sum.Plan == nil || sum.Plan.C != d.C || sum.Plan.A != d.A || sum.Plan.P != d.Cycle.P {
				t.Fatalf("summary's plan figures %+v, policy %q; want plan's P %s A %s C %d", sum.Plan, sum.Policy, d.Cycle.P, d.A, d.C)
			}
			if sum.Started == 0 || sum.YoungestAtStart < d.A {
				t.Errorf("youngest claim at its first start: %s (of %d started); no claim may start before A = %s", sum.YoungestAtStart, sum.Started, d.A)
			}
			reachA := monday.Add(time.Hour)
			occ := r.Pools[0].Occurrences
			first := -1
			for i, o := range occ {
				if o.End.After(reachA) && first < 0 {
					first = i
				}
			}
			if first < 0 {
				t.Fatal("no occurrence after the claims reach A")
			}
			// The occurrence open when they reach A (or the next) starts the
			// backlog, C per occurrence, ±1 for a start on an edge.
			got := sum.PerOccurrence[first:]
			if got[0] == 0 && len(got) > 1 {
				got = got[1:]
			}
			for i := 0; i < 2 && i < len(got); i++ {
				if got[i] < d.C-1 || got[i] > d.C+1 {
					t.Errorf("occurrence %d after A: %d starts, plan's C = %d (all: %v)", i+1, got[i], d.C, sum.PerOccurrence)
				}
			}
			// plan's guarantee behind its burst finding: at least G·C of the
			// nodes sharing one deadline rotate before it (more when the
			// windows come closer than P).
			short := max(pool.Nodes-d.G*d.C, 0)
			if sum.ForceExpired > short+1 || sum.RotationFailures != 0 {
				t.Errorf("force-expired %d, failed %d; plan: %d nodes share a deadline and G·C = %d·%d rotate before it", sum.ForceExpired, sum.RotationFailures, pool.Nodes, d.G, d.C)
			}
		})
	}
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
	if s.Rotations != 0 {
		t.Errorf("rotated %d: an infeasible pool is held, nothing starts", s.Rotations)
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
	rotated := 0
	for _, l := range p.Lanes {
		if l.End == EndRotated {
			rotated++
		}
	}
	for what, want := range map[string]int{
		`<rect class="window"`:       inSpan,
		`<line class="lane `:         len(p.Lanes),
		`<line class="lane rotated"`: rotated,
		`<circle class="start"`:      p.Summary.Attempts,
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
