package main

import (
	"net/http"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The reviews -metrics-auth makes have their own request budget: the
// filter builds its TokenReview and SubjectAccessReview clients from the
// config it is given, and the manager's carries the rate limiter every
// worker shares (limits.go), which made-up tokens sent to the metrics port
// would otherwise spend.
const reviewQPS, reviewBurst = 5, 10

// metricsAuth is controller-runtime's own authentication and authorization
// filter (filters.WithAuthenticationAndAuthorization: a TokenReview of the
// bearer token, a SubjectAccessReview of the verb on the path, each answer
// cached briefly), on reviewConfig.
func metricsAuth(c *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	return filters.WithAuthenticationAndAuthorization(reviewConfig(c), hc)
}

// reviewConfig is c with the reviews' own rate limiter.
func reviewConfig(c *rest.Config) *rest.Config {
	rc := rest.CopyConfig(c)
	rc.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(reviewQPS, reviewBurst)
	return rc
}

// metricsCertDir is where a mounted serving certificate (tls.crt, tls.key)
// is read from: controller-runtime's default directory under TMPDIR, which
// the chart's metrics.certSecret mounts at /tmp/… in the container.
func metricsCertDir() string {
	return filepath.Join(os.TempDir(), "k8s-metrics-server", "serving-certs")
}
