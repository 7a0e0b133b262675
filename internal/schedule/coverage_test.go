package schedule

import (
	"strings"
	"testing"
	"time"
)

// The 300-node pool at one rotation at a time is not covered; the
// verdict names the N, window length and pool split that would cover it,
// and each of them does.
func TestCoverageOfTheFleetPool(t *testing.T) {
	in, cy := fleetPool(t)
	pop := Population{Nodes: 300, Burst: 40}
	one := in
	one.MaxUnavailable = 1
	d := Derive(one, cy)
	c := CoverageOf(one, d, pop, Needed(in, d, pop))
	if !c.Applies || c.Covered || c.Reason != "ThroughputBelowArrival" || c.Capacity != 10 || c.Needed != 6 {
		t.Fatalf("coverage %+v", c)
	}
	if c.Arrival < 50 || c.Arrival > 60 {
		t.Errorf("arrival %.2f, want N·P/A ≈ 54.7", c.Arrival)
	}
	s := c.Sentence()
	for _, want := range []string{"300 nodes need 5", "10 fit (C at maxUnavailable 1)", "maxUnavailable 6", "pools of at most 54 nodes", "occurrences of at least"} {
		if !strings.Contains(s, want) {
			t.Errorf("sentence %q lacks %q", s, want)
		}
	}
	// each remedy covers the pool
	six := in
	six.MaxUnavailable = 6
	if c6 := CoverageOf(six, Derive(six, cy), pop, 6); !c6.Covered {
		t.Errorf("maxUnavailable 6: %+v", c6)
	}
	if c54 := CoverageOf(one, d, Population{Nodes: c.LargestPool, Burst: 10}, 1); !c54.Covered {
		t.Errorf("%d nodes: %+v", c.LargestPool, c54)
	}
	if c.Window <= 4*time.Hour || c.Window >= cy.P {
		t.Fatalf("window %s", c.Window)
	}
	wide := NewCalendar(mustEntry(t, "UTC", []string{"Tue", "Sat"}, "02:00", clock(2*time.Hour+c.Window))).Measure(at(t, "UTC", "2026-11-30 12:00"))
	if cw := CoverageOf(one, Derive(one, wide), pop, 1); !cw.Covered {
		t.Errorf("occurrences of %s: %+v (C = %d)", c.Window, cw, cw.Capacity)
	}
	narrower := NewCalendar(mustEntry(t, "UTC", []string{"Tue", "Sat"}, "02:00", clock(2*time.Hour+c.Window-25*time.Minute))).Measure(at(t, "UTC", "2026-11-30 12:00"))
	if cn := CoverageOf(one, Derive(one, narrower), pop, 1); cn.Covered {
		t.Errorf("occurrences 25m shorter than %s still cover: %+v", c.Window, cn)
	}
}

// A pool covered, a pool layer 2 does not judge, and deadlines bunched
// beyond K·C.
func TestCoverageVerdicts(t *testing.T) {
	in, cy := fleetPool(t)
	in.MaxUnavailable = 1
	d := Derive(in, cy)
	if c := CoverageOf(in, d, Population{Nodes: 30, Burst: 7}, 1); !c.Covered || !c.Applies || !strings.HasPrefix(c.Sentence(), "covered: 30 nodes") {
		t.Errorf("30 nodes: %+v %q", c, c.Sentence())
	}
	if c := CoverageOf(in, d, Population{}, 0); !c.Covered || c.Applies {
		t.Errorf("no nodes: %+v", c)
	}
	burst := CoverageOf(in, d, Population{Nodes: 40, Burst: 40}, 2)
	if burst.Covered || burst.Reason != "ThroughputBurstShortfall" || !strings.Contains(burst.Sentence(), "maxUnavailable 2") {
		t.Errorf("40 nodes at one deadline: %+v %q", burst, burst.Sentence())
	}
}

func clock(d time.Duration) string {
	return time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).Add(d).Format("15:04")
}
