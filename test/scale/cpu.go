//go:build scale

// The controller's CPU at idle and under a NodeClaim status churn, taken in
// interleaved slices.

package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// cpuSlice is how long each idle or churn slice lasts. The cluster's own
// background is not steady: by default kwok rewrites every Node's status
// about 10 minutes after the last write (its node-heartbeat stage), so a
// fleet filled at once sends its Node updates in waves that start during
// the measurements, and a Node update costs the controller a decode too.
// One idle window followed by one churn window charged a wave to
// whichever it fell in: the per-update figure moved by 0.3 ms between
// runs of one binary. The benchmark's cluster now rewrites Node status
// daily (clusterEnv), and short slices in the order idle, churn, churn,
// idle, … see the same background on both sides, a linear drift
// included.
const cpuSlice = 10 * time.Second

// cpuDrain closes each churn slice after its last update was answered: the
// controller decodes that update's watch event and runs its pass a moment
// later, and without the wait that work was charged to the idle slice that
// followed, which lowered the net figure twice over (less churn, more
// idle). The drain's own idle second is subtracted with the rest of the
// churn slice's wall at the idle rate.
const cpuDrain = time.Second

// cpuUnderChurn measures the idle CPU and the churn's CPU, each over the
// larger of -idle and -churn-window (in whole slices), with a CPU profile
// of the whole interleaved stretch when profiles are asked for.
func (b *bench) cpuUnderChurn(ctx context.Context, p *controllerRun, metricsPort int, prof *profiler, r *result) error {
	// An even count of each, so the order's pairs cancel a linear drift.
	slices := max(int((max(b.cfg.idle, b.cfg.churnWindow)+cpuSlice-1)/cpuSlice), 1)
	slices += slices % 2
	cpuProfile := prof.cpu(2*time.Duration(slices)*cpuSlice + time.Duration(slices)*cpuDrain + 5*time.Second)
	// Per kind of slice: CPU ticks, wall, API requests, passes.
	var ticks [2]int64
	var wall [2]time.Duration
	var reqs, passes [2]float64
	seq := 0
	for i := range 2 * slices {
		kind := 0 // idle
		if i%4 == 1 || i%4 == 2 {
			kind = 1 // churn
		}
		m0, err := metrics(metricsPort)
		if err != nil {
			return err
		}
		c0, _ := cpuTicks(p.Pid())
		w0 := time.Now()
		if kind == 1 {
			if seq, err = b.churnFor(ctx, cpuSlice, seq, r); err == nil {
				err = sleep(ctx, cpuDrain)
			}
		} else {
			err = sleep(ctx, cpuSlice)
		}
		if err != nil {
			return err
		}
		c1, _ := cpuTicks(p.Pid())
		wall[kind] += time.Since(w0)
		m1, err := metrics(metricsPort)
		if err != nil {
			return err
		}
		ticks[kind] += c1 - c0
		reqs[kind] += m1["rest_client_requests_total"] - m0["rest_client_requests_total"]
		passes[kind] += m1["nodepool_reconcile_total"] - m0["nodepool_reconcile_total"]
		if err := p.exited(); err != nil {
			return err
		}
	}
	cpuProfile()
	r.idleCPU = float64(ticks[0]) / clkTck / wall[0].Seconds()
	r.idleReqs = reqs[0] / wall[0].Seconds()
	r.churnCPU, r.churnWall = float64(ticks[1])/clkTck, wall[1]
	r.churnPasses, r.churnReqs = passes[1], reqs[1]
	logf("%s: idle %s in %d slices: %.3f s CPU (%.2f%% of a core), %.0f passes, %.2f API requests/s", r.label, wall[0].Round(time.Second), slices, float64(ticks[0])/clkTck, 100*r.idleCPU, passes[0], r.idleReqs)
	logf("%s: churn %d updates (%d failed) in %s in %d slices: %.2f s CPU, %.0f passes, %.0f API requests", r.label, r.churnUpdates, r.churnFailed, r.churnWall.Round(time.Millisecond), slices, r.churnCPU, r.churnPasses, r.churnReqs)
	return nil
}

// churnFor updates claims' status, round robin from update seq on, at
// -churn-rate for d, and returns once every update sent has been answered.
func (b *bench) churnFor(ctx context.Context, d time.Duration, seq int, r *result) (int, error) {
	n := int(float64(b.cfg.churnRate) * d.Seconds())
	tick := time.NewTicker(time.Second / time.Duration(b.cfg.churnRate))
	defer tick.Stop()
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	defer func() { r.churnUpdates, r.churnFailed = r.churnUpdates+ok.Load(), r.churnFailed+failed.Load() }()
	defer wg.Wait()
	sem := make(chan struct{}, 32)
	for range n {
		select {
		case <-ctx.Done():
			return seq, ctx.Err()
		case <-tick.C:
		}
		seq++
		name, i := b.claims[(seq-1)%len(b.claims)], seq
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := b.churn(ctx, name, i); err != nil {
				failed.Add(1)
			} else {
				ok.Add(1)
			}
		})
	}
	return seq, nil
}
