// Package chart tests the Helm chart charts/node-rotation-controller with the
// Helm SDK: rendering across values, the schema, the exact RBAC, the CRDs
// and, with KUBEBUILDER_ASSETS, a server-side dry-run of every object.
package chart
