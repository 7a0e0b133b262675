// Package api holds the controller's own Kubernetes API: the cluster-scoped
// RotationPolicy (noderotation.io/v1alpha1) an operator authors. Its status
// is observational only; rotation state lives in annotations (§5.1).
package api
