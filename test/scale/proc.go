//go:build scale

// Readings of the controller process: /proc, its /metrics, the machine.

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sample is one reading of the controller process.
type sample struct {
	rss, anon, file, hwm int64 // KiB
	heapInuse            float64
	cpuTicks             int64
}

func readProc(pid int) (sample, error) {
	var s sample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			s.rss = v
		case "RssAnon:":
			s.anon = v
		case "RssFile:":
			s.file = v
		case "VmHWM:":
			s.hwm = v
		}
	}
	s.cpuTicks, err = cpuTicks(pid)
	return s, err
}

// cpuTicks is utime+stime of pid in clock ticks. The command name (field
// 2) may hold spaces; the fields after its closing parenthesis start at
// field 3 (state), so utime and stime (14 and 15) are its 12th and 13th.
func cpuTicks(pid int) (int64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(rest) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	u, err1 := strconv.ParseInt(rest[11], 10, 64)
	s, err2 := strconv.ParseInt(rest[12], 10, 64)
	return u + s, errors.Join(err1, err2)
}

// machineTicks is the whole machine's busy and total CPU time in clock
// ticks (/proc/stat's cpu line: idle and iowait are not busy).
func machineTicks() (busy, total int64, err error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	for i, f := range fields[1:] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %w", err)
		}
		total += n
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy, total, nil
}

// componentTicks is the CPU ticks of each cluster component running from
// dir/pids (cluster.sh writes one file per component: its pid).
func componentTicks(dir string) map[string]int64 {
	out := map[string]int64{}
	entries, _ := os.ReadDir(filepath.Join(dir, "pids"))
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, "pids", e.Name()))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		if t, err := cpuTicks(pid); err == nil {
			out[e.Name()] = t
		}
	}
	return out
}

// metrics reads the controller's /metrics and sums, per metric name, the
// series whose label text contains every string in match[name].
func metrics(port int) (map[string]float64, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("/metrics: %s %s", resp.Status, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		series := line[:sp]
		name := series
		if i := strings.IndexByte(series, '{'); i >= 0 {
			name = series[:i]
		}
		out[name] += v
		switch {
		case name == "controller_runtime_reconcile_total" && strings.Contains(series, `controller="nodepool-rotation"`):
			out["nodepool_reconcile_total"] += v
		case name == "controller_runtime_reconcile_time_seconds_sum" && strings.Contains(series, `controller="nodepool-rotation"`):
			out["nodepool_reconcile_seconds"] += v
		case name == "workqueue_depth":
			out["workqueue_depth_all"] += v
		}
	}
	return out, sc.Err()
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func median[T int64 | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func mib(kib int64) string { return fmt.Sprintf("%.1f", float64(kib)/1024) }

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
