// Package rules holds the §5.3 transition table as versioned YAML with CEL
// guards (rotation.yaml, embedded), and the Go observers its facts may
// name. A pull request's diff of the table is the behaviour change a
// reviewer reads; package engine loads and proves it.
package rules

//go:generate go run ../cmd/rotationctl rules render -o ../docs/transitions.md
