//go:build scale

// The table the benchmark prints.

package main

import (
	"fmt"
	"maps"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

func (b *bench) report(base, scale *result, fill map[string]string, kubeconfig string) {
	n := scale.claims - base.claims
	slope := float64(scale.anon-base.anon) / float64(n)
	rows := []row{
		{"NodeClaims (= Nodes)", strconv.Itoa(base.claims), strconv.Itoa(scale.claims)},
		{"Pods", strconv.Itoa(b.podsFor(base.claims)), strconv.Itoa(b.cfg.pods)},
		{"NodePools", strconv.Itoa(b.cfg.pools), strconv.Itoa(b.cfg.pools)},
		{"start to settled (s)", settled(base), settled(scale)},
		{"CPU from start to settled (s)", fmt.Sprintf("%.2f", base.startCPU), fmt.Sprintf("%.2f", scale.startCPU)},
		{"VmRSS (MiB)", mib(base.rss), mib(scale.rss)},
		{"RssAnon (MiB)", mib(base.anon), mib(scale.anon)},
		{"RssFile (MiB)", mib(base.file), mib(scale.file)},
		{"VmHWM, peak RSS (MiB)", mib(base.hwm), mib(scale.hwm)},
		{"go_memstats_heap_inuse_bytes (MiB)", fmt.Sprintf("%.1f", base.heap/(1<<20)), fmt.Sprintf("%.1f", scale.heap/(1<<20))},
		{"idle CPU (% of a core)", fmt.Sprintf("%.2f", 100*base.idleCPU), fmt.Sprintf("%.2f", 100*scale.idleCPU)},
		{"idle API requests (/s)", fmt.Sprintf("%.2f", base.idleReqs), fmt.Sprintf("%.2f", scale.idleReqs)},
		{"churn: status updates (rate/s, failed)", fmt.Sprintf("%d (%d/s, %d failed)", base.churnUpdates, b.cfg.churnRate, base.churnFailed), fmt.Sprintf("%d (%d/s, %d failed)", scale.churnUpdates, b.cfg.churnRate, scale.churnFailed)},
		{"churn: CPU in the window (s)", fmt.Sprintf("%.2f", base.churnCPU), fmt.Sprintf("%.2f", scale.churnCPU)},
		{"churn: CPU per update (ms)", perUpdate(base), perUpdate(scale)},
		{"churn: passes per update", fmt.Sprintf("%.2f", base.churnPasses/float64(max(base.churnUpdates, 1))), fmt.Sprintf("%.2f", scale.churnPasses/float64(max(scale.churnUpdates, 1)))},
		{"churn: API requests per update", fmt.Sprintf("%.2f", base.churnReqs/float64(max(base.churnUpdates, 1))), fmt.Sprintf("%.2f", scale.churnReqs/float64(max(scale.churnUpdates, 1)))},
	}
	host, _ := os.Hostname()
	fmt.Println()
	fmt.Println("== fleet scale (make bench-scale) ==")
	fmt.Printf("date:     %s\n", b.start.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Printf("machine:  %d CPUs (nproc), %s, %s %s/%s, host %s\n", runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH, host)
	fmt.Printf("command:  go run -tags scale ./test/scale %s (controller %s)\n", strings.Join(os.Args[1:], " "), b.bin)
	fmt.Printf("settings: -nodes %d -pods %d -pools %d -settle %s -idle %s -churn-rate %d -churn-window %s -rotate-pools %d -rotate-per-pool %d -controller-args %q\n",
		b.cfg.nodes, b.cfg.pods, b.cfg.pools, b.cfg.settle, b.cfg.idle, b.cfg.churnRate, b.cfg.churnWindow, b.cfg.rotatePools, b.cfg.rotatePerPool, b.cfg.controllerArgs)
	fmt.Printf("cluster:  %s (kubeconfig %s), nodes Ready at once (NODE_BOOT_DELAY_MS=0)\n", b.cfg.clusterDir, kubeconfig)
	for _, r := range b.rows {
		fmt.Printf("%s: %s\n", r.what, r.base)
	}
	fmt.Printf("fill:     %s\n          %s\n", fill["claims"], fill["pods"])
	fmt.Println()
	fmt.Printf("| figure | %d nodes | %d nodes |\n|---|---|---|\n", base.claims, scale.claims)
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s |\n", r.what, r.base, r.scale)
	}
	fmt.Println()
	fmt.Printf("slope: (RssAnon at %d − RssAnon at %d) / %d added node+claim pairs = %.1f KiB per node+claim\n", scale.claims, base.claims, n, slope)
	fmt.Printf("       heap in use: %.1f KiB per node+claim\n", (scale.heap-base.heap)/1024/float64(n))
	fmt.Printf("total wall time: %s\n", time.Since(b.start).Round(time.Second))
}

// reportVariants prints the figures of the controller's runs with other
// environments on the same fleet, beside the default run's and its second
// run's.
func (b *bench) reportVariants(scale *result, variants []*result) {
	if len(variants) == 0 {
		return
	}
	runs := append([]*result{scale}, variants...)
	fmt.Println()
	fmt.Printf("controller environments at %d nodes, measured one after another on the same fleet:\n\n", scale.claims)
	head, sep := "| figure |", "|---|"
	for _, r := range runs {
		head, sep = head+" "+r.label+" |", sep+"---|"
	}
	fmt.Println(head)
	fmt.Println(sep)
	figures := []struct {
		what string
		f    func(r *result) string
	}{
		{"VmRSS (MiB)", func(r *result) string { return mib(r.rss) }},
		{"RssAnon (MiB)", func(r *result) string { return mib(r.anon) }},
		{"heap in use (MiB)", func(r *result) string { return fmt.Sprintf("%.1f", r.heap/(1<<20)) }},
		{"start to settled (s)", settled},
		{"CPU from start to settled (s)", func(r *result) string { return fmt.Sprintf("%.2f", r.startCPU) }},
		{"idle CPU (% of a core)", func(r *result) string { return fmt.Sprintf("%.2f", 100*r.idleCPU) }},
		{"churn: CPU per update (ms)", perUpdate},
	}
	for _, fig := range figures {
		line := "| " + fig.what + " |"
		for _, r := range runs {
			line += " " + fig.f(r) + " |"
		}
		fmt.Println(line)
	}
}

// reportRotations prints the rotation phases: per-rotation wall, floor and
// overhead (medians and the 90th percentile over the phase's rotations),
// and the P-pool overhead against the single pool's.
func (b *bench) reportRotations(phases []*phase) {
	for _, n := range b.notes {
		fmt.Printf("note: %s\n", n)
	}
	if len(phases) == 0 {
		return
	}
	fmt.Println()
	fmt.Println("rotations on the full fleet (floor: placeholder created → placeholder Running on a Ready surge node, plus old claim deleting → gone; overhead: the rest of the rotation)")
	fmt.Printf("maxUnavailable %d in each rotating pool\n\n", b.cfg.rotateAtOnce)
	fmt.Println("| pools rotating at once | rotations | phase wall (s) | wall per rotation, median (s) | floor, median (s) | overhead, median (s) | overhead, p90 (s) | overhead, mean (s) | API requests per rotation | passes per rotation | time in passes per rotation (s) | controller CPU per rotation (s) | machine CPU busy |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, ph := range phases {
		var wall, floor, over []float64
		for _, r := range ph.rotations {
			wall, floor, over = append(wall, r.wall().Seconds()), append(floor, r.floor().Seconds()), append(over, r.overhead().Seconds())
		}
		n := float64(max(len(ph.rotations), 1))
		fmt.Printf("| %d | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | %.3f | %.3f | %.0f %% |\n", ph.pools, len(ph.rotations), ph.wall.Seconds(),
			median(wall), median(floor), median(over), quantile(over, 0.9), mean(over), ph.requests/n, ph.passes/n, ph.passSeconds/n, ph.cpu/n, 100*ph.machineBusy)
	}
	fmt.Println()
	for _, ph := range phases {
		names := slices.Sorted(maps.Keys(ph.components))
		parts := make([]string, 0, len(names))
		for _, n := range names {
			parts = append(parts, fmt.Sprintf("%s %.1f s", n, ph.components[n]))
		}
		fmt.Printf("CPU over the %d-pool phase (%.0f s): controller %.1f s, %s\n", ph.pools, ph.wall.Seconds(), ph.cpu, strings.Join(parts, ", "))
	}
	if len(phases) == 2 && len(phases[0].rotations) > 0 && len(phases[1].rotations) > 0 {
		one, many := overheads(phases[0]), overheads(phases[1])
		fmt.Printf("\noverhead with %d pools at once vs one pool: median %+.0f %%, mean %+.0f %%\n", phases[1].pools,
			100*(median(many)/median(one)-1), 100*(mean(many)/mean(one)-1))
	}
	for _, ph := range phases {
		fmt.Printf("\nrotations with %d pool(s) at once (s from the phase's start: placeholder, surge Ready, deleting, gone; overhead):\n", ph.pools)
		t0 := ph.rotations[0].start
		for _, r := range ph.rotations {
			if r.start.Before(t0) {
				t0 = r.start
			}
		}
		for _, r := range ph.rotations {
			fmt.Printf("  %-12s %6.2f %6.2f %6.2f %6.2f  %5.2f\n", r.claim, r.placeholder.Sub(t0).Seconds(), r.surgeReady.Sub(t0).Seconds(),
				r.deleting.Sub(t0).Seconds(), r.gone.Sub(t0).Seconds(), r.overhead().Seconds())
		}
	}
}

// perUpdate is the churn's CPU per update: all the window's CPU, and net
// of what the same controller spends at idle over as long.
func perUpdate(r *result) string {
	if r.churnUpdates == 0 {
		return "-"
	}
	net := r.churnCPU - r.idleCPU*r.churnWall.Seconds()
	return fmt.Sprintf("%.2f (%.2f net of idle)", 1000*r.churnCPU/float64(r.churnUpdates), 1000*net/float64(r.churnUpdates))
}

func overheads(ph *phase) []float64 {
	var out []float64
	for _, r := range ph.rotations {
		out = append(out, r.overhead().Seconds())
	}
	return out
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}

// quantile is the nearest-rank q-quantile.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(math.Ceil(q*float64(len(s))))-1)]
}

// settled is the start-to-settled time, or what still moved when the
// controller never went quiet (the figures after it were then taken on a
// busy controller).
func settled(r *result) string {
	if r.notQuiet != "" {
		return fmt.Sprintf("not quiet after %.0f (%s)", r.settledAfter.Seconds(), r.notQuiet)
	}
	return fmt.Sprintf("%.0f", r.settledAfter.Seconds())
}
