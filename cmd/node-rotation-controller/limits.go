package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// limitClients gives every client built from cfg one token bucket: the
// workers share -kube-api-qps and -kube-api-burst instead of each client
// getting its own (client-go's default when cfg.RateLimiter is nil).
func limitClients(cfg *rest.Config, o options) {
	cfg.QPS, cfg.Burst = float32(o.apiQPS), o.apiBurst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
}

// memoryLimitEnv carries the container's memory limit in bytes; the chart
// sets it from the downward API (resourceFieldRef limits.memory).
const memoryLimitEnv = "NRC_MEMORY_LIMIT"

// memoryLimitShare is the part of the container limit the Go heap may grow
// to before the collector works harder: the rest is the binary's
// file-backed pages, goroutine stacks and what the runtime has not yet
// returned — room that keeps a busy controller from an OOM kill.
const memoryLimitShare = 0.9

// setMemoryLimit sets the runtime's soft memory limit from the container's
// limit, unless GOMEMLIMIT already says what it should be.
func setMemoryLimit(log logr.Logger) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	limit, ok := memoryLimit(os.Getenv(memoryLimitEnv))
	if !ok {
		return
	}
	debug.SetMemoryLimit(limit)
	log.Info("memory limit set from the container's", "bytes", limit, "containerBytes", os.Getenv(memoryLimitEnv))
}

// memoryLimit is memoryLimitShare of a byte count; false for an absent,
// malformed or non-positive value (no limit is set).
func memoryLimit(containerBytes string) (int64, bool) {
	n, err := strconv.ParseInt(containerBytes, 10, 64)
	if err != nil || n <= 0 {
		return 0, false
	}
	return int64(float64(n) * memoryLimitShare), true
}

// gcPercent is the collector's target (GOGC) unless the environment sets
// one: the heap may grow by half its live size between collections
// rather than Go's default of all of it. The controller's live heap is
// mostly the cache, which grows with the fleet, while it allocates little
// per event, so halving the headroom costs little CPU; the fleet-scale
// figures are measured with it
// (docs/performance.md#one-decode-per-event-shared-maps-gogc50).
const gcPercent = 50

// setGCPercent sets the collector's target to gcPercent, unless GOGC
// already says what it should be.
func setGCPercent(log logr.Logger) {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(gcPercent)
	log.V(1).Info("garbage collection target set", "percent", gcPercent)
}

// maxProcs is how many threads run Go code at once (GOMAXPROCS) unless the
// environment sets it. The controller's work is a trickle of watch events
// and passes that wait on the API server; with a processor per core, each
// event handed from one goroutine to the next (HTTP/2 reader, watch
// decoder, informer, handler) wakes an idle one, and each collection puts
// idle ones to marking. On one, a NodeClaim status update cost 0.42–0.50
// ms of CPU against 0.51–0.61 on both cores of the benchmark's machine,
// the same build and fleet (docs/performance.md#a-decoder-without-a-scan-first).
// Concurrent passes still overlap their API calls, where a pass waits.
const maxProcs = 1

// setMaxProcs sets GOMAXPROCS to maxProcs, unless the environment already
// says what it should be: a positive count, the only one the runtime
// takes.
func setMaxProcs(log logr.Logger) {
	if n, err := strconv.Atoi(os.Getenv("GOMAXPROCS")); err == nil && n > 0 {
		return
	}
	was := runtime.GOMAXPROCS(maxProcs)
	log.V(1).Info("Go processors set", "procs", maxProcs, "default", was)
}
