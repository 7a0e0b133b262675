// Package identity is the chart-identity e2e (build tag e2e): the chart is
// installed with the Helm SDK into the local cluster (test/world/cluster.sh,
// real Karpenter with its kwok provider), the controller binary taken out of
// the image runs with a token of the chart's ServiceAccount and the
// arguments of the chart's Deployment, rotates nodes through a rollback and
// a success, and the API server's audit log must show no request of that
// ServiceAccount answered 403. It proves the chart's RBAC is enough for
// what the controller does; test/chart's rbac tests prove it is no more.
//
// The install is a user's of a release: over an older RotationPolicy CRD,
// which helm leaves alone and the documented server-side apply of the
// chart's CRDs upgrades; the image pinned by image.digest; a metrics
// certificate mounted from metrics.certSecret, which the controller serves
// and a scrape verifies; metrics.auth (the default) answering 401, 403 and
// 200 to no token, a token without get /metrics and one with it; and
// rotationctl version reading the installed controller's version.
package identity
