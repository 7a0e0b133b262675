// Package crd carries the RotationPolicy CustomResourceDefinition that
// `make generate` writes here, so tools can judge a policy as the API
// server would (internal/admission).
package crd

import _ "embed"

// RotationPolicy is the CRD's YAML, as generated.
//
//go:embed noderotation.io_rotationpolicies.yaml
var RotationPolicy []byte
