package main

import (
	"crypto/tls"
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

func TestMemoryLimit(t *testing.T) {
	for in, want := range map[string]int64{"268435456": 241591910, "": 0, "256Mi": 0, "0": 0, "-5": 0} {
		got, ok := memoryLimit(in)
		if got != want || ok != (want > 0) {
			t.Errorf("memoryLimit(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
}

// Every client built from the config shares one token bucket.
func TestLimitClientsSharesOneBucket(t *testing.T) {
	cfg := &rest.Config{}
	limitClients(cfg, options{apiQPS: 7, apiBurst: 9})
	if cfg.QPS != 7 || cfg.Burst != 9 || cfg.RateLimiter == nil {
		t.Fatalf("qps %v burst %d limiter %v", cfg.QPS, cfg.Burst, cfg.RateLimiter)
	}
	if qps := cfg.RateLimiter.QPS(); qps != 7 {
		t.Fatalf("limiter qps %v", qps)
	}
	// two clients built from the config (as the manager's cache, client and
	// event recorder are) draw from that one bucket
	for range 2 {
		c := rest.CopyConfig(cfg)
		c.GroupVersion = &corev1.SchemeGroupVersion
		c.NegotiatedSerializer = clientscheme.Codecs.WithoutConversion()
		rc, err := rest.RESTClientFor(c)
		if err != nil {
			t.Fatal(err)
		}
		if rc.GetRateLimiter() != cfg.RateLimiter {
			t.Fatal("a client has a limiter of its own")
		}
	}
}

// GOMEMLIMIT, when set, wins over the container's limit; without it the
// runtime's limit is 90 % of the container's.
func TestSetMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	t.Setenv(memoryLimitEnv, "1000000000")
	t.Setenv("GOMEMLIMIT", "2GiB")
	debug.SetMemoryLimit(math.MaxInt64)
	setMemoryLimit(logr.Discard())
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set the limit became %d", got)
	}
	t.Setenv("GOMEMLIMIT", "")
	setMemoryLimit(logr.Discard())
	if got := debug.SetMemoryLimit(-1); got != 900000000 {
		t.Errorf("limit %d, want 90 %% of the container's", got)
	}
}

// GOGC, when set, wins; without it the collector's target is gcPercent.
func TestSetGCPercent(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	t.Setenv("GOGC", "200")
	setGCPercent(logr.Discard())
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set the target became %d", got)
	}
	t.Setenv("GOGC", "")
	setGCPercent(logr.Discard())
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("target %d, want 50 (docs/performance.md measured the controller at it)", got)
	}
}

// Secure metrics get the ECDSA certificate option; plain HTTP none.
func TestManagerOptionsMetricsCertificate(t *testing.T) {
	if got := managerOptions(options{metricsSecure: true, metricsAddr: ":8443"}, nil).Metrics.TLSOpts; len(got) != 1 {
		t.Fatalf("secure metrics: %d TLS options, want the self-signed ECDSA one", len(got))
	}
	cfg := &tls.Config{}
	managerOptions(options{metricsSecure: true}, nil).Metrics.TLSOpts[0](cfg)
	if cfg.GetCertificate == nil {
		t.Fatal("the option installs no certificate (no mounted one in the default directory)")
	}
	if got := managerOptions(options{metricsSecure: false}, nil).Metrics.TLSOpts; len(got) != 0 {
		t.Fatalf("plain metrics: %d TLS options", len(got))
	}
}

func TestSetMaxProcs(t *testing.T) {
	prev := runtime.GOMAXPROCS(3)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	t.Setenv("GOMAXPROCS", "3")
	setMaxProcs(logr.Discard())
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("with GOMAXPROCS set the processors became %d", got)
	}
	for _, env := range []string{"", "0", "many"} { // the runtime ignores the last two
		runtime.GOMAXPROCS(3)
		t.Setenv("GOMAXPROCS", env)
		setMaxProcs(logr.Discard())
		if got := runtime.GOMAXPROCS(0); got != 1 {
			t.Errorf("GOMAXPROCS=%q: %d processors, want 1 (docs/performance.md measured the controller on one)", env, got)
		}
	}
}
