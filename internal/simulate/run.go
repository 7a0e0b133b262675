package simulate

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
	"github.com/noderotation/node-rotation-controller/internal/scheme"
	"github.com/noderotation/node-rotation-controller/internal/table"
)

// Input is one simulation: the fleet, the RotationPolicies applied to it,
// and the seed of every random draw.
type Input struct {
	Fleet    Fleet
	Policies []v1alpha1.RotationPolicy
	Seed     uint64
	// Engine is the proven rules table to run; nil runs the shipped one.
	Engine *engine.Engine
}

// Result is what a run produced: per pool, its summary, its nodes' lanes
// and the window occurrences of the span.
type Result struct {
	Start, End   time.Time
	Seed         uint64
	RulesVersion int
	Pools        []*PoolResult
	Total        Totals
}

// PoolResult is one pool's part of a Result.
type PoolResult struct {
	Summary     PoolSummary
	Lanes       []*Lane
	Occurrences []schedule.Interval
	Timezone    *time.Location
}

// Run simulates the fleet under the policies with the shipped rules table.
func Run(ctx context.Context, in Input) (*Result, error) {
	eng := in.Engine
	if eng == nil {
		var err error
		if eng, err = table.Load(); err != nil {
			return nil, fmt.Errorf("the rules table does not prove: %w", err)
		}
	}
	sch, err := scheme.New()
	if err != nil {
		return nil, fmt.Errorf("building the scheme: %w", err)
	}
	f := in.Fleet
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("the fleet: %w", err)
	}
	start := f.Start
	if start.IsZero() {
		return nil, fmt.Errorf("the fleet's start time is unset")
	}
	s := newSim(start, f.Span.Duration, in.Seed)
	worlds := make([]*world, len(f.Pools))
	for i, p := range f.Pools {
		w, err := newWorld(s, p, in.Policies, sch, eng)
		if err != nil {
			return nil, err
		}
		if err := w.populate(ctx); err != nil {
			return nil, fmt.Errorf("pool %s: %w", p.Name, err)
		}
		w.wake()
		worlds[i] = w
	}
	if err := s.run(ctx); err != nil {
		return nil, err
	}
	res := &Result{Start: start, End: s.end, Seed: in.Seed, RulesVersion: eng.Version()}
	for _, w := range worlds {
		res.Pools = append(res.Pools, w.result(in.Policies, start, s.end))
	}
	res.Total = total(res.Pools)
	return res, nil
}

// result closes the pool's books at the end of the span.
func (w *world) result(policies []v1alpha1.RotationPolicy, start, end time.Time) *PoolResult {
	b := w.books
	if !b.holdSince.IsZero() {
		b.endHold(end)
	}
	pr := &PoolResult{Lanes: b.order, Timezone: time.UTC}
	sum := PoolSummary{Pool: w.spec.Name, Nodes: w.spec.Nodes, Passes: b.passes, PassErrors: b.errors, LastPassError: b.lastError,
		ForceExpired: b.forced, Findings: b.findings, LaunchFailures: b.launchFailures, StuckDrains: b.stuckDrains,
		RotationFailures: b.events["RotationFailed"], WindowsMissed: b.events["WindowMissed"],
		LongestHold: b.longestHold, LongestHoldAt: b.longestHoldAt, Events: b.events}
	gov := policy.Select(policies, w.spec.Labels)
	if gov.Governed() {
		sum.Policy = gov.Policy.Name
		if settings, err := gov.Settings, gov.Err; err == nil {
			in, d := settings.Derive(nodePool(w.spec), start)
			pop := schedule.Population{Nodes: w.spec.Nodes}
			if w.lastObs != nil {
				pop = w.lastObs.Census.Population
			}
			cov := settings.Coverage(in, d.Cycle, nodePool(w.spec), pop, start)
			_, d, inForce := settings.Sized(in, d.Cycle, pop)
			sum.Plan = &Figures{P: d.Cycle.P, D: d.Cycle.D, A: d.A, C: d.C, N: inForce.N, TRotEst: d.TRotEst, AlwaysOpen: d.Cycle.AlwaysOpen}
			sum.Coverage = &cov
			pr.Occurrences = settings.Calendar.Occurrences(start, end)
			if len(pr.Occurrences) > 0 && pr.Occurrences[0].Location != nil {
				pr.Timezone = pr.Occurrences[0].Location
			}
		} else {
			sum.PolicyError = err.Error()
		}
	} else if len(gov.Conflict) > 0 {
		sum.PolicyError = fmt.Sprintf("conflict between %d policies", len(gov.Conflict))
	}
	sum.account(b.order, pr.Occurrences, start, end)
	pr.Summary = sum
	return pr
}

// account fills the figures drawn from the lanes.
func (s *PoolSummary) account(lanes []*Lane, occ []schedule.Interval, start, end time.Time) {
	var margins []time.Duration
	for _, l := range lanes {
		if l.Surge && (l.End == EndReaped || l.End == EndFailed) {
			s.ExtraSurge++
		}
		s.Attempts += len(l.Starts)
		if m, ok := l.Margin(); ok {
			s.Rotations++
			margins = append(margins, m)
		}
		if len(l.Starts) > 0 {
			age := l.Starts[0].Sub(l.Created)
			if s.Started == 0 || age < s.YoungestAtStart {
				s.YoungestAtStart = age
			}
			s.OldestAtStart = max(s.OldestAtStart, age)
			s.Started++
		}
	}
	sort.Slice(margins, func(i, j int) bool { return margins[i] < margins[j] })
	if n := len(margins); n > 0 {
		s.MarginMin, s.MarginMedian = margins[0], margins[n/2]
	}
	s.PerOccurrence = make([]int, len(occ))
	for _, l := range lanes {
		for _, t := range l.Starts {
			for i, o := range occ {
				if o.Contains(t) {
					s.PerOccurrence[i]++
				}
			}
		}
	}
	for i, o := range occ {
		// Only occurrences wholly inside the span are compared with C.
		if !o.Start.Before(start) && !o.End.After(end) {
			s.MaxPerOccurrence = max(s.MaxPerOccurrence, s.PerOccurrence[i])
		}
	}
}
