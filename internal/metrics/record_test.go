package metrics

import (
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// series reads the value of the collector's series for nodepool (a counter,
// a gauge or a histogram's sample count), and whether it exists at all. It
// never creates the series it looks for.
func series(t *testing.T, c prometheus.Collector, nodepool string, more ...string) (float64, bool) {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	var v float64
	found := false
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, l := range d.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["nodepool"] != nodepool || (len(more) == 2 && labels[more[0]] != more[1]) {
			continue
		}
		found = true
		switch {
		case d.Gauge != nil:
			v = d.GetGauge().GetValue()
		case d.Counter != nil:
			v = d.GetCounter().GetValue()
		case d.Histogram != nil:
			v = float64(d.GetHistogram().GetSampleCount())
		}
	}
	return v, found
}

func gaugeValue(t *testing.T, g *prometheus.GaugeVec, nodepool string) float64 {
	t.Helper()
	v, ok := series(t, g, nodepool)
	if !ok {
		t.Fatalf("%s has no series for %s", describe(g), nodepool)
	}
	return v
}

// describe names the collector's metric.
func describe(c prometheus.Collector) string {
	ch := make(chan *prometheus.Desc, 1)
	c.Describe(ch)
	d := (<-ch).String()
	if m := fqName.FindStringSubmatch(d); m != nil {
		return m[1]
	}
	return d
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// derivation is a pool open 24/7 (P = 1m) with E = 14d, tGP = 30m and the
// default timings: t_rot = 47m, A = 14d − 49m, G = 2, C = 404, t_rot_est =
// 15m.
var derivation = schedule.Derivation{
	Cycle: schedule.Cycle{HasOccurrence: true, AlwaysOpen: true, P: time.Minute},
	TRot:  47 * time.Minute, TRotEst: 15 * time.Minute, A: 14*24*time.Hour - 49*time.Minute, Derived: true, G: 2, C: 404,
}

func TestRecordGovernedPool(t *testing.T) {
	freeze := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	Record(Pool{Name: "rec-governed", Governance: "governed", Candidates: 2, InBackoff: 3, ShortLead: 1, MaxRetry: 4,
		InFlight: 3, MaxUnavailable: 4, WindowOpen: true, FreezeUntil: freeze, DrainStuck: true, Derivation: derivation, Disrupted: 5, BudgetAllowed: 6})
	want := map[*prometheus.GaugeVec]float64{
		PolicyConflict: 0, Candidates: 2, InBackoff: 3, InProgress: 3, MaxUnavailable: 4, ShortLeadNodes: 1, RetryCount: 4, WindowActive: 1,
		FreezeUntil: float64(freeze.Unix()), DrainStuck: 1,
		AgeThreshold: (14*24*time.Hour - 49*time.Minute).Seconds(), RotationChances: 2, ThroughputCapacity: 404,
		TRotEstimate: 900, TRotBound: 2820, WindowPeriod: 60, DisruptedNodes: 5, BudgetAllowed: 6,
	}
	for g, v := range want {
		if got := gaugeValue(t, g, "rec-governed"); got != v {
			t.Errorf("%s = %v, want %v", describe(g), got, v)
		}
	}
	if len(want) != len(perPoolGauges) {
		t.Errorf("checked %d gauges of %d", len(want), len(perPoolGauges))
	}
	// The next pass overwrites every gauge: nothing sticks.
	Record(Pool{Name: "rec-governed", Governance: "governed", Derivation: derivation})
	for _, g := range []*prometheus.GaugeVec{Candidates, InBackoff, InProgress, MaxUnavailable, ShortLeadNodes, RetryCount, WindowActive, FreezeUntil, DrainStuck, DisruptedNodes, BudgetAllowed} {
		if got := gaugeValue(t, g, "rec-governed"); got != 0 {
			t.Errorf("%s = %v after a quiet pass, want 0", describe(g), got)
		}
	}
}

// An ungoverned pool's series are dropped, counters included.
func TestRecordUngovernedDropsTheSeries(t *testing.T) {
	Record(Pool{Name: "rec-leaving", Governance: "governed", Candidates: 1, Derivation: derivation})
	Completed.WithLabelValues("rec-leaving", "success").Inc()
	Duration.WithLabelValues("rec-leaving", "drain").Observe(10)
	Record(Pool{Name: "rec-leaving", Governance: "ungoverned", Candidates: 5, Derivation: derivation})
	for _, c := range append(All(), Completed, Duration) {
		if _, ok := series(t, c, "rec-leaving"); ok {
			t.Errorf("%s keeps a series for an ungoverned pool", describe(c))
		}
	}
}

// A tie or an invalid policy blocks the pool: policy_conflict is 1.
func TestRecordBlockedPool(t *testing.T) {
	Record(Pool{Name: "rec-conflict", Governance: "conflict", Derivation: derivation})
	if got := gaugeValue(t, PolicyConflict, "rec-conflict"); got != 1 {
		t.Errorf("conflict: policy_conflict %v", got)
	}
	// A conflict's figures are shown as they are derived.
	if got := gaugeValue(t, RotationChances, "rec-conflict"); got != 2 {
		t.Errorf("conflict: rotation_chances %v", got)
	}
	// An invalid policy's figures mean nothing: all 0.
	Record(Pool{Name: "rec-invalid", Governance: "invalid", Candidates: 1, Derivation: derivation})
	if got := gaugeValue(t, PolicyConflict, "rec-invalid"); got != 1 {
		t.Errorf("invalid: policy_conflict %v", got)
	}
	for _, g := range []*prometheus.GaugeVec{AgeThreshold, RotationChances, ThroughputCapacity, TRotEstimate, TRotBound, WindowPeriod} {
		if got := gaugeValue(t, g, "rec-invalid"); got != 0 {
			t.Errorf("invalid: %s = %v, want 0", describe(g), got)
		}
	}
	if got := gaugeValue(t, Candidates, "rec-invalid"); got != 1 {
		t.Errorf("invalid: candidates %v", got)
	}
}

// expireAfter Never: every derived gauge is 0.
func TestRecordNoDeadline(t *testing.T) {
	d := derivation
	d.NoDeadline = true
	Record(Pool{Name: "rec-never", Governance: "governed", Derivation: d})
	for _, g := range []*prometheus.GaugeVec{AgeThreshold, RotationChances, ThroughputCapacity, TRotEstimate, TRotBound, WindowPeriod} {
		if got := gaugeValue(t, g, "rec-never"); got != 0 {
			t.Errorf("%s = %v, want 0", describe(g), got)
		}
	}
	if got := gaugeValue(t, PolicyConflict, "rec-never"); got != 0 {
		t.Errorf("policy_conflict %v", got)
	}
}

// Without an occurrence only throughput_capacity (and P) is 0: E = 14d, tGP
// unset (1h), readyTimeout 15m → t_rot = 77m, A = 14d − 77m, G = 0.
func TestRecordNoOccurrence(t *testing.T) {
	e := 14 * 24 * time.Hour
	d := schedule.Derive(schedule.Inputs{ExpireAfter: &e, Timing: schedule.Timing{MinRotationChances: 2, ReadyTimeout: 15 * time.Minute, MaxUnavailable: 1}}, schedule.Cycle{})
	Record(Pool{Name: "rec-nowindow", Governance: "governed", Derivation: d})
	want := map[*prometheus.GaugeVec]float64{
		AgeThreshold: (e - 77*time.Minute).Seconds(), RotationChances: 0, ThroughputCapacity: 0,
		TRotEstimate: 900, TRotBound: 77 * 60, WindowPeriod: 0,
	}
	for g, v := range want {
		if got := gaugeValue(t, g, "rec-nowindow"); got != v {
			t.Errorf("%s = %v, want %v", describe(g), got, v)
		}
	}
}

// The gate of the last idle pass reads 1 and every other gate 0; a pass
// that consulted no gate (in flight) leaves them as they were.
func TestRecordStartGate(t *testing.T) {
	Forget("rec-gate")
	gates := func() map[string]float64 {
		out := map[string]float64{}
		for _, g := range StartGates {
			v, _ := series(t, StartGate, "rec-gate", "gate", g)
			out[g] = v
		}
		return out
	}
	Record(Pool{Name: "rec-gate", Governance: "governed", Derivation: derivation, Gate: "disruptionBudget"})
	if g := gates(); g["disruptionBudget"] != 1 || g["open"] != 0 || len(g) != 9 {
		t.Errorf("held: %v", g)
	}
	Record(Pool{Name: "rec-gate", Governance: "governed", Derivation: derivation})
	if g := gates(); g["disruptionBudget"] != 1 {
		t.Errorf("in flight, the last gate is kept: %v", g)
	}
	Record(Pool{Name: "rec-gate", Governance: "governed", Derivation: derivation, Gate: "open"})
	if g := gates(); g["disruptionBudget"] != 0 || g["open"] != 1 {
		t.Errorf("open: %v", g)
	}
}

// Forget drops every series of the pool and only of that pool.
func TestForget(t *testing.T) {
	for _, p := range []string{"rec-gone", "rec-stays"} {
		Forget(p) // a clean start, also under -count
		Record(Pool{Name: p, Governance: "governed", Candidates: 1, Derivation: derivation, DrainBlocked: map[string]int{"pdb": 1}, Gate: "open"})
		Completed.WithLabelValues(p, "failure").Inc()
		Completed.WithLabelValues(p, "expired").Inc()
		ForcefulFallback.WithLabelValues(p).Inc()
		WindowMissed.WithLabelValues(p).Inc()
		ExpiredUnrotated.WithLabelValues(p).Inc()
		Duration.WithLabelValues(p, "surge_wait").Observe(1)
		Duration.WithLabelValues(p, "drain").Observe(1)
	}
	Forget("rec-gone")
	collectors := append(All(), Completed, Duration)
	for _, c := range collectors {
		if c == RulesInfo {
			continue
		}
		if _, ok := series(t, c, "rec-gone"); ok {
			t.Errorf("%s keeps a series of a forgotten pool", describe(c))
		}
		if _, ok := series(t, c, "rec-stays"); !ok {
			t.Errorf("%s lost the series of another pool", describe(c))
		}
	}
	if v, ok := series(t, Completed, "rec-stays", "outcome", "expired"); !ok || v != 1 {
		t.Errorf("completed{rec-stays, expired} = %v, %v", v, ok)
	}
	if v, ok := series(t, Duration, "rec-stays", "phase", "drain"); !ok || v != 1 {
		t.Errorf("duration{rec-stays, drain} count = %v, %v", v, ok)
	}
}

// Register records the rules version as the only rules_info series.
func TestRegisterRecordsTheRulesVersion(t *testing.T) {
	Register(7)
	Register(8)
	ch := make(chan prometheus.Metric, 4)
	RulesInfo.Collect(ch)
	close(ch)
	var versions []string
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, d.GetLabel()[0].GetValue())
		if d.GetGauge().GetValue() != 1 {
			t.Errorf("rules_info value %v", d.GetGauge().GetValue())
		}
	}
	if len(versions) != 1 || versions[0] != "8" {
		t.Errorf("rules_info versions %v, want [8]", versions)
	}
}

// A pass that did not look at drain blockers (a rotation in flight) leaves
// the gauge at the last idle pass's count; one that looked sets every
// reason, zero included.
func TestDrainBlockedKeepsTheIdleCount(t *testing.T) {
	const p = "rec-blocked"
	Forget(p)
	Record(Pool{Name: p, Governance: "governed", Derivation: derivation, DrainBlocked: map[string]int{"do-not-disrupt": 2}})
	Record(Pool{Name: p, Governance: "governed", Derivation: derivation, InFlight: 1})
	for reason, want := range map[string]float64{"do-not-disrupt": 2, "pdb": 0} {
		if v, ok := series(t, DrainBlocked, p, "reason", reason); !ok || v != want {
			t.Errorf("reason %s: %v (found %v), want %v", reason, v, ok, want)
		}
	}
}

// The counters an alert takes increase() of exist at 0 once a governed
// pool is recorded, so the first count is an increase.
func TestAlertedCountersStartAtZero(t *testing.T) {
	Forget("rec-zero")
	Record(Pool{Name: "rec-zero", Governance: "governed", Derivation: derivation})
	for _, c := range []*prometheus.CounterVec{ExpiredUnrotated, WindowMissed} {
		if v, ok := series(t, c, "rec-zero"); !ok || v != 0 {
			t.Errorf("%s{rec-zero} = %v, %v: want a series at 0", describe(c), v, ok)
		}
	}
	Forget("rec-zero")
}
