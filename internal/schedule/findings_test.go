package schedule

import (
	"testing"
	"time"
)

func TestFindingBoundaries(t *testing.T) {
	lead := 8*day + dur("1h17m") // K·P + t_rot of the worked example
	cases := []struct {
		name   string
		mutate func(*Inputs)
		want   map[string]Severity
	}{
		{"E + tGP exactly 21d", func(in *Inputs) {
			in.ExpireAfter, in.TerminationGrace, in.LifetimeCap = ptr(20*day), ptr(day), EKSAutoModeLifetime
		}, nil},
		{"E + tGP a second over 21d", func(in *Inputs) {
			in.ExpireAfter, in.TerminationGrace, in.LifetimeCap = ptr(20*day), ptr(day+time.Second), EKSAutoModeLifetime
		}, map[string]Severity{"HardCapExceeded": Warning}},
		{"no cap off EKS Auto Mode", func(in *Inputs) { in.ExpireAfter, in.TerminationGrace = ptr(30*day), ptr(day) }, nil},
		{"unset tGP does not count towards the cap", func(in *Inputs) {
			in.ExpireAfter, in.TerminationGrace, in.LifetimeCap = ptr(21*day), nil, EKSAutoModeLifetime
		},
			map[string]Severity{"TGPUnset": Info}},
		{"E alone over the cap", func(in *Inputs) {
			in.ExpireAfter, in.TerminationGrace, in.LifetimeCap = ptr(21*day+time.Second), nil, EKSAutoModeLifetime
		},
			map[string]Severity{"TGPUnset": Info, "HardCapExceeded": Warning}},
		{"A exactly P", func(in *Inputs) { in.ExpireAfter = ptr(lead + 4*day) }, nil},
		{"A just under P", func(in *Inputs) { in.ExpireAfter = ptr(lead + 4*day - time.Nanosecond) }, map[string]Severity{"AVeryAggressive": Warning}},
		{"A exactly 0", func(in *Inputs) { in.ExpireAfter = ptr(lead) }, map[string]Severity{"AgeThresholdNotPositive": Fatal}},
		{"A just above 0", func(in *Inputs) { in.ExpireAfter = ptr(lead + time.Nanosecond) }, map[string]Severity{"AVeryAggressive": Warning}},
		{"override leaving exactly K", func(in *Inputs) { in.AgeThreshold = ptr(5*day + dur("22h43m")) }, nil},
		{"override a nanosecond later", func(in *Inputs) { in.AgeThreshold = ptr(5*day + dur("22h43m") + time.Nanosecond) },
			map[string]Severity{"OverrideGBelowK": Warning}},
		{"retryBackoff equal to readyTimeout", func(in *Inputs) { in.RetryBackoff = in.ReadyTimeout }, nil},
		{"drainEstimate equal to tGP", func(in *Inputs) { in.DrainEstimate = ptr(time.Hour) }, nil},
		{"provisioningEstimate equal to readyTimeout", func(in *Inputs) { in.ProvisioningEstimate = ptr(15 * time.Minute) }, nil},
		{"K negative", func(in *Inputs) { in.MinRotationChances = -1 }, map[string]Severity{"MinRotationChancesBelowOne": Fatal}},
		// E + tGP = ∞ and an override past every deadline: no age finding,
		// but a drain estimate above tGP still shows, being no age figure.
		{"Never skips every age finding", func(in *Inputs) {
			in.ExpireAfter, in.AgeThreshold, in.TerminationGrace, in.DrainEstimate = nil, ptr(100*day), ptr(30*day), ptr(31*day)
		}, map[string]Severity{"DrainEstimateAboveTGP": Warning}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := workedInputs()
			c.mutate(&in)
			assertReasons(t, Findings(in, Derive(in, baseCycle()), Population{}), c.want)
		})
	}
}

func TestLayerTwoRunsOnlyWithAPositiveAgeThreshold(t *testing.T) {
	crowd := Population{Nodes: 1000, Burst: 1000}
	lead := 8*day + dur("1h17m")
	cases := []struct {
		name   string
		mutate func(*Inputs)
		cy     Cycle
		want   map[string]Severity
	}{
		{"A positive: layer 2 runs", func(*Inputs) {}, baseCycle(),
			map[string]Severity{"ThroughputBelowArrival": Warning, "ThroughputBurstShortfall": Warning}},
		{"A zero: layer 2 is skipped", func(in *Inputs) { in.ExpireAfter = ptr(lead) }, baseCycle(),
			map[string]Severity{"AgeThresholdNotPositive": Fatal}},
		{"Never: layer 2 is skipped", func(in *Inputs) { in.ExpireAfter = nil }, baseCycle(), nil},
		{"no occurrence: layer 2 is skipped", func(*Inputs) {}, Cycle{}, map[string]Severity{"NoWindows": Fatal}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := workedInputs()
			c.mutate(&in)
			fs := Findings(in, Derive(in, c.cy), crowd)
			assertReasons(t, fs, c.want)
			for _, f := range fs {
				wantLayer := 1
				if f.Reason == "ThroughputBelowArrival" || f.Reason == "ThroughputBurstShortfall" {
					wantLayer = 2
				}
				if f.Layer != wantLayer {
					t.Errorf("%s is layer %d, want %d", f.Reason, f.Layer, wantLayer)
				}
			}
		})
	}
}

func TestLayerTwoMessagesAndEdges(t *testing.T) {
	in := workedInputs()
	d := Derive(in, baseCycle()) // C = 10, A = 5d22h43m, P = 4d, K = 2
	fs := layer2(in, d, Population{Nodes: 15, Burst: 21})
	if len(fs) != 2 {
		t.Fatalf("findings = %+v", fs)
	}
	// 15 · 4d / 5d22h43m = 86400m / 8563m = 10.09
	if want := "capacity C = 10 starts per occurrence is below the arrival rate N·P/A = 10.09 (N = 15, P = 4d, A = 5d22h43m)"; fs[0].Message != want {
		t.Errorf("arrival message = %q, want %q", fs[0].Message, want)
	}
	if want := "21 nodes have their deadlines within one window period P, but K·C = 2·10 = 20 rotations fit before them"; fs[1].Message != want {
		t.Errorf("burst message = %q, want %q", fs[1].Message, want)
	}
	assertReasons(t, layer2(in, d, Population{Nodes: 0, Burst: 20}), nil)

	// t_rot_est (15m) + cooldownAfter against the gap of 2d20h.
	for _, c := range []struct {
		cooldown time.Duration
		want     map[string]Severity
	}{
		{2*day + 20*time.Hour - 15*time.Minute, nil},
		{2*day + 20*time.Hour - 15*time.Minute + time.Nanosecond, map[string]Severity{"RotationSpansNextWindow": Warning}},
	} {
		in := workedInputs()
		in.CooldownAfter = c.cooldown
		assertReasons(t, layer2(in, Derive(in, baseCycle()), Population{}), c.want)
	}
	// A union open around the clock has no gap to span.
	in.CooldownAfter = 30 * day
	open := Cycle{HasOccurrence: true, AlwaysOpen: true, P: Tick, D: week}
	assertReasons(t, layer2(in, Derive(in, open), Population{}), nil)
}

func TestLayerOneMessages(t *testing.T) {
	in := workedInputs()
	in.ExpireAfter = ptr(8*day + dur("1h17m"))
	in.TerminationGrace = nil
	in.MinRotationChances = 2
	fs := layer1(in, Derive(in, baseCycle()))
	want := map[string]string{
		"AgeThresholdNotPositive": "age threshold A = 0s is not positive (E = 8d1h17m, lead time K·P + t_rot = 8d1h17m)",
		"TGPUnset":                "terminationGracePeriod is unset (Karpenter's default: a drain may wait on PodDisruptionBudgets indefinitely); t_rot assumes 1h",
	}
	if len(fs) != len(want) {
		t.Fatalf("findings = %+v", fs)
	}
	for _, f := range fs {
		if f.Message != want[f.Reason] || f.Layer != 1 {
			t.Errorf("%s: layer %d message %q, want layer 1 %q", f.Reason, f.Layer, f.Message, want[f.Reason])
		}
	}
	in = workedInputs()
	in.AgeThreshold = ptr(9 * day)
	fs = layer1(in, Derive(in, baseCycle()))
	if len(fs) != 1 || fs[0].Message != "the ageThreshold override 9d guarantees 1 chance(s), fewer than minRotationChances 2" {
		t.Errorf("override findings = %+v", fs)
	}
}

func TestHasFatal(t *testing.T) {
	cases := []struct {
		name string
		fs   []Finding
		want bool
	}{
		{"none", nil, false},
		{"warnings only", []Finding{{Severity: Warning}, {Severity: Warning}}, false},
		{"one fatal among warnings", []Finding{{Severity: Warning}, {Severity: Fatal}}, true},
		{"an unknown severity is not fatal", []Finding{{Severity: "Info"}}, false},
	}
	for _, c := range cases {
		if got := HasFatal(c.fs); got != c.want {
			t.Errorf("%s: HasFatal = %v, want %v", c.name, got, c.want)
		}
	}
}
