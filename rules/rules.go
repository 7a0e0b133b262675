package rules

import _ "embed"

// Table is the shipped rules file, rotation.yaml.
//
//go:embed rotation.yaml
var Table []byte
