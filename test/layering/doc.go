// Package layering holds the test that keeps the import graph one-way:
// rules is data, engine knows nothing of Kubernetes, actions write the
// targets they are given, and the reconciler composes the rest
// (docs/architecture.md).
package layering
