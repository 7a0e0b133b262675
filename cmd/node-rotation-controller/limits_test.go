package main

import (
	"testing"

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
	if rest.CopyConfig(cfg).RateLimiter != cfg.RateLimiter {
		t.Fatal("a copied config has its own limiter")
	}
	if qps := cfg.RateLimiter.QPS(); qps != 7 {
		t.Fatalf("limiter qps %v", qps)
	}
}
