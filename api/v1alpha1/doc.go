// Package v1alpha1 is the noderotation.io/v1alpha1 API: the cluster-scoped
// RotationPolicy an operator authors to govern NodePools
// (docs/design.md#governance). Its status is observational only; rotation
// state lives in annotations (docs/design.md#state-model).
//
// Durations are strings validated by the CRD and parsed by the controller,
// never decoded into time.Duration by the client: a policy stored with a
// value the controller cannot parse must not break the decoding of every
// other policy in the informer (it turns only its own Ready condition to
// Invalid).
//
// +kubebuilder:object:generate=true
// +groupName=noderotation.io
package v1alpha1

//go:generate go tool controller-gen object paths=.
//go:generate go tool controller-gen crd:crdVersions=v1 paths=. output:crd:dir=../../config/crd
//go:generate sh -c "cp ../../config/crd/*.yaml ../../charts/node-rotation-controller/crds/"
