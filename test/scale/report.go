//go:build scale

// The table the benchmark prints.

package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func (b *bench) report(base, scale *result, fill map[string]string, kubeconfig string) {
	// CPU per update: all the window's CPU, and net of what the same
	// controller spends at idle over as long.
	perUpdate := func(r *result) string {
		if r.churnUpdates == 0 {
			return "-"
		}
		net := r.churnCPU - r.idleCPU*r.churnWall.Seconds()
		return fmt.Sprintf("%.2f (%.2f net of idle)", 1000*r.churnCPU/float64(r.churnUpdates), 1000*net/float64(r.churnUpdates))
	}
	n := scale.claims - base.claims
	slope := float64(scale.anon-base.anon) / float64(n)
	rows := []row{
		{"NodeClaims (= Nodes)", strconv.Itoa(base.claims), strconv.Itoa(scale.claims)},
		{"Pods", strconv.Itoa(b.podsFor(base.claims)), strconv.Itoa(b.cfg.pods)},
		{"NodePools", strconv.Itoa(b.cfg.pools), strconv.Itoa(b.cfg.pools)},
		{"start to settled (s)", fmt.Sprintf("%.0f", base.settledAfter.Seconds()), fmt.Sprintf("%.0f", scale.settledAfter.Seconds())},
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
	fmt.Printf("settings: -nodes %d -pods %d -pools %d -settle %s -idle %s -churn-rate %d -churn-window %s\n",
		b.cfg.nodes, b.cfg.pods, b.cfg.pools, b.cfg.settle, b.cfg.idle, b.cfg.churnRate, b.cfg.churnWindow)
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
