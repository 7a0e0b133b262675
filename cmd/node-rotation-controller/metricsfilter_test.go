package main

import (
	"regexp"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// The reviews' limiter is their own: the manager's stays the manager's.
func TestReviewConfigHasItsOwnBudget(t *testing.T) {
	shared := flowcontrol.NewTokenBucketRateLimiter(50, 100)
	c := &rest.Config{Host: "https://example:6443", RateLimiter: shared}
	rc := reviewConfig(c)
	if rc.RateLimiter == shared || rc.RateLimiter == nil || rc.RateLimiter.QPS() != reviewQPS {
		t.Errorf("review limiter %v (QPS %v): want its own at %v/s", rc.RateLimiter, rc.RateLimiter.QPS(), reviewQPS)
	}
	if c.RateLimiter != shared || rc.Host != c.Host {
		t.Errorf("the manager's config was changed, or the copy lost its host")
	}
}

// The chart's metrics.certSecret mount is where the binary reads the
// certificate in the container (TMPDIR unset: /tmp).
func TestTheChartMountsTheCertDir(t *testing.T) {
	t.Setenv("TMPDIR", "/tmp")
	deployment := readFile(t, "../../charts/node-rotation-controller/templates/deployment.yaml")
	m := regexp.MustCompile(`\{name: metrics-cert, mountPath: ([^,}]+)`).FindStringSubmatch(deployment)
	if m == nil {
		t.Fatal("the chart's Deployment mounts no metrics-cert volume")
	}
	if m[1] != metricsCertDir() {
		t.Errorf("the chart mounts metrics.certSecret at %s; the binary reads %s", m[1], metricsCertDir())
	}
}
