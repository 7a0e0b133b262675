package schedule

import (
	"strings"
	"testing"
	"time"
)

// fleetPool is the pool: Tue and Sat 02:00–06:00, expireAfter
// 720h, tGP unset, every other setting at its default.
func fleetPool(t *testing.T) (Inputs, Cycle) {
	t.Helper()
	e := 720 * time.Hour
	in := Inputs{ExpireAfter: &e, Timing: Timing{MinRotationChances: 2, ReadyTimeout: 15 * time.Minute, CooldownAfter: 10 * time.Minute, RetryBackoff: time.Hour}}
	cy := NewCalendar(mustEntry(t, "UTC", []string{"Tue", "Sat"}, "02:00", "06:00")).Measure(at(t, "UTC", "2026-11-30 12:00"))
	return in, cy
}

func throughputFindings(in Inputs, cy Cycle, n int, pop Population) []string {
	in.MaxUnavailable = n
	var out []string
	for _, f := range Findings(in, Derive(in, cy), pop) {
		if strings.HasPrefix(f.Reason, "Throughput") {
			out = append(out, f.Reason)
		}
	}
	return out
}

// Needed is exactly the layer-2 boundary: no throughput finding at it, one
// at one less.
func TestNeededIsTheLayerTwoBoundary(t *testing.T) {
	in, cy := fleetPool(t)
	one := in
	one.MaxUnavailable = 1
	d := Derive(one, cy)
	if d.C != 10 {
		t.Fatalf("C at one rotation = %d, want 10 (4h / 25m)", d.C)
	}
	for _, c := range []struct {
		pop  Population
		want int
	}{
		{Population{Nodes: 300}, 6},              // 300·4d / (22d22h43m − ...) = 54.7 starts needed, C = 10 per rotation
		{Population{Nodes: 300, Burst: 300}, 15}, // K·C ≥ 300: 2·10·15
		{Population{Nodes: 30, Burst: 7}, 1},
		{Population{Nodes: 3000, Burst: 40}, 55},
	} {
		got := Needed(in, d, c.pop)
		if got != c.want {
			t.Errorf("Needed(%+v) = %d, want %d", c.pop, got, c.want)
		}
		if f := throughputFindings(in, cy, got, c.pop); len(f) != 0 {
			t.Errorf("%+v at N = %d still finds %v", c.pop, got, f)
		}
		if got > 1 {
			if f := throughputFindings(in, cy, got-1, c.pop); len(f) == 0 {
				t.Errorf("%+v at N = %d finds nothing: %d is not the smallest", c.pop, got-1, got)
			}
		}
	}
}

func TestNeededWhereLayerTwoDoesNotApply(t *testing.T) {
	in, cy := fleetPool(t)
	d := Derive(in, cy)
	never := in
	never.ExpireAfter = nil
	if n := Needed(never, Derive(never, cy), Population{Nodes: 300}); n != 0 {
		t.Errorf("no deadline: Needed = %d, want 0", n)
	}
	if n := Needed(in, d, Population{}); n != 0 {
		t.Errorf("no nodes: Needed = %d, want 0", n)
	}
	k0 := in
	k0.MinRotationChances = 0
	if n := Needed(k0, Derive(k0, cy), Population{Nodes: 300, Burst: 300}); n != 0 {
		t.Errorf("K = 0 (fatal elsewhere): Needed = %d, want 0", n)
	}
	empty := NewCalendar().Measure(at(t, "UTC", "2026-11-30 12:00"))
	if n := Needed(in, Derive(in, empty), Population{Nodes: 300}); n != 0 {
		t.Errorf("no occurrence: Needed = %d, want 0", n)
	}
}

func TestAmountOf(t *testing.T) {
	for _, c := range []struct {
		a     Amount
		nodes int
		want  int
	}{
		{Amount{Count: 3}, 100, 3},
		{Amount{}, 100, 1},
		{Amount{Percent: 10}, 300, 30},
		{Amount{Percent: 10}, 301, 31}, // rounded up
		{Amount{Percent: 10}, 5, 1},
		{Amount{Percent: 10}, 0, 1}, // never below 1
		{Amount{Percent: 100}, 12, 12},
	} {
		if got := c.a.Of(c.nodes); got != c.want {
			t.Errorf("%s of %d = %d, want %d", c.a, c.nodes, got, c.want)
		}
	}
}

func TestResolveConcurrency(t *testing.T) {
	in, cy := fleetPool(t)
	in.MaxUnavailable = 7 // ignored: Resolve derives at one rotation
	tenPercent := Amount{Percent: 10}
	for _, c := range []struct {
		name string
		c    Concurrency
		pop  Population
		n    int
		why  string
	}{
		{"a count", Concurrency{Amount: Amount{Count: 4}}, Population{Nodes: 300}, 4, "maxUnavailable 4"},
		{"a percentage", Concurrency{Amount: tenPercent}, Population{Nodes: 12}, 2, "maxUnavailable 10% of 12 nodes, rounded up"},
		{"auto covers", Concurrency{Auto: true, Cap: tenPercent}, Population{Nodes: 300}, 6, "auto: 6, the smallest that covers 300 nodes"},
		{"auto held at its cap", Concurrency{Auto: true, Cap: Amount{Count: 4}}, Population{Nodes: 300}, 4, "auto: 4, held at maxUnavailableCap 4; 6 would cover the pool"},
		{"auto with nothing to cover", Concurrency{Auto: true, Cap: tenPercent}, Population{}, 1, "auto: 1, the pool has no throughput to cover"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.c.Resolve(in, cy, c.pop)
			if f.N != c.n || !strings.HasPrefix(f.Why, c.why) {
				t.Errorf("Resolve = %+v, want N %d, why starting %q", f, c.n, c.why)
			}
		})
	}
}
