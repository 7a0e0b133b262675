//go:build scale

// One controller run on the cluster as it stands: memory once settled,
// CPU at idle and under churn.

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/process"
)

// result is what one controller run measured.
type result struct {
	label                string
	claims               int
	startCPU             float64 // s of CPU from start to settled
	settledAfter         time.Duration
	notQuiet             string // why settle gave up, when it did
	rss, anon, file, hwm int64  // KiB, medians of the settle window (hwm: the last)
	heap                 float64
	idleCPU              float64 // s of CPU per s of wall
	idleReqs             float64 // API requests per s at idle
	churnUpdates         int64
	churnFailed          int64
	churnCPU             float64 // s of CPU in the window
	churnPasses          float64
	churnReqs            float64
	churnWall            time.Duration
}

// controllerRun is one controller process the benchmark started, with the
// ports of its metrics and probes.
type controllerRun struct {
	*process.Controller
	started time.Time
}

// exited is an error, with the log's tail, once the process has ended.
func (p *controllerRun) exited() error {
	if p.Exited() {
		return fmt.Errorf("the controller exited (%v); log tail:\n%s", p.ExitErr(), p.Tail(4000))
	}
	return nil
}

// startController starts the controller binary on the benchmark's cluster
// (no leader election, plain-HTTP metrics on a free loopback port, pprof
// when profiles are asked for) and waits until it is ready.
func (b *bench) startController(ctx context.Context, bin, kubeconfig, label string, env []string) (*controllerRun, []int, *profiler, error) {
	ports, err := process.FreePorts(3)
	if err != nil {
		return nil, nil, nil, err
	}
	args := []string{"-kubeconfig", kubeconfig, "-namespace", fixtures.ControllerNamespace,
		"-placeholder-priority-class", fixtures.PlaceholderPriorityClass, "-leader-elect=false", "-log-format=json",
		fmt.Sprintf("-metrics-bind-address=127.0.0.1:%d", ports[0]), "-metrics-secure=false",
		fmt.Sprintf("-health-probe-bind-address=127.0.0.1:%d", ports[1])}
	args = append(args, strings.Fields(b.cfg.controllerArgs)...)
	prof := b.profiler(label, ports[2])
	if prof != nil {
		args = append(args, fmt.Sprintf("-pprof-bind-address=127.0.0.1:%d", ports[2]))
	}
	t0 := time.Now()
	c, err := process.StartWithEnv(bin, filepath.Join(b.cfg.clusterDir, "controller"), label, env, args...)
	if err != nil {
		return nil, nil, nil, err
	}
	p := &controllerRun{Controller: c, started: t0}
	b.ctrl = c
	logf("%s: controller pid %d (log %s), %d NodeClaims", label, p.Pid(), p.Log, len(b.claims))
	err = poll(ctx, 3*time.Minute, label+": controller ready", func() (bool, error) {
		if err := p.exited(); err != nil {
			return false, err
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]))
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		p.Stop(15 * time.Second)
		b.ctrl = nil
		return nil, nil, nil, err
	}
	return p, ports, prof, nil
}

// errNotQuiet is settle's error when the controller was still busy at the
// deadline; it says which of the conditions still failed, so a fleet that
// never goes quiet can still be measured, and the report says so.
type errNotQuiet struct{ why string }

func (e *errNotQuiet) Error() string { return "not quiet after 5m: " + e.why }

// settle waits until the controller is quiet: every fleet pool reconciled,
// no pass for 10 s and its queues empty.
func (b *bench) settle(ctx context.Context, p *controllerRun, metricsPort int, label string) error {
	var last float64 = -1
	var quietSince time.Time
	why := "no metrics yet"
	err := poll(ctx, 5*time.Minute, label+": controller settled", func() (bool, error) {
		if err := p.exited(); err != nil {
			return false, err
		}
		m, err := metrics(metricsPort)
		if err != nil {
			why = "metrics: " + err.Error()
			return false, nil
		}
		n, depth := m["nodepool_reconcile_total"], m["workqueue_depth_all"]
		switch {
		case n < float64(b.cfg.pools):
			why = fmt.Sprintf("%.0f passes, fewer than the %d pools", n, b.cfg.pools)
		case depth > 0:
			why = fmt.Sprintf("queue depth %.0f", depth)
		case n != last:
			why = fmt.Sprintf("passes still running (%.0f since the start, +%.0f since the last look)", n, n-max(last, 0))
		default:
			why = fmt.Sprintf("quiet for only %s", time.Since(quietSince).Round(time.Second))
			return time.Since(quietSince) >= 10*time.Second, nil
		}
		last, quietSince = n, time.Now()
		return false, nil
	})
	if errors.Is(err, errPollTimeout) {
		return &errNotQuiet{why: why}
	}
	return err
}

func (b *bench) measure(ctx context.Context, bin, kubeconfig, label string, env []string) (*result, error) {
	p, ports, prof, err := b.startController(ctx, bin, kubeconfig, label, env)
	if err != nil {
		return nil, err
	}
	defer func() {
		p.Stop(15 * time.Second)
		b.ctrl = nil
	}()
	r := &result{label: label, claims: len(b.claims)}
	t0 := p.started
	exited := p.exited
	if err := b.settle(ctx, p, ports[0], label); err != nil {
		var nq *errNotQuiet
		if !errors.As(err, &nq) {
			return nil, err
		}
		// Measured anyway: memory after five busy minutes is still the
		// figure a large fleet has to fit, marked as such in the report.
		r.notQuiet = nq.why
		logf("%s: %v; measuring anyway", label, err)
	}
	r.settledAfter = time.Since(t0)
	s, err := readProc(p.Pid())
	if err != nil {
		return nil, err
	}
	r.startCPU = float64(s.cpuTicks) / clkTck
	verb := "settled"
	if r.notQuiet != "" {
		verb = "measured, not quiet,"
	}
	logf("%s: %s after %s, %.2f s CPU since start", label, verb, r.settledAfter.Round(time.Second), r.startCPU)

	var rss, anon, file []int64
	var heap []float64
	n := max(int(b.cfg.settle/(5*time.Second)), 1)
	for i := range n {
		if i > 0 {
			if err := sleep(ctx, 5*time.Second); err != nil {
				return nil, err
			}
		}
		s, err := readProc(p.Pid())
		if err != nil {
			return nil, err
		}
		m, err := metrics(ports[0])
		if err != nil {
			return nil, err
		}
		rss, anon, file, heap = append(rss, s.rss), append(anon, s.anon), append(file, s.file), append(heap, m["go_memstats_heap_inuse_bytes"])
		r.hwm = s.hwm
	}
	r.rss, r.anon, r.file, r.heap = median(rss), median(anon), median(file), median(heap)
	prof.save("heap", "heap")
	logf("%s: RSS %d KiB (anon %d, file %d), peak %d KiB, heap in use %.1f MiB", label, r.rss, r.anon, r.file, r.hwm, r.heap/(1<<20))

	if err := b.cpuUnderChurn(ctx, p, ports[0], prof, r); err != nil {
		return nil, err
	}
	if err := exited(); err != nil {
		return nil, err
	}
	return r, nil
}
