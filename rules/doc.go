// Package rules holds the rotation state machine's transition table
// (docs/design.md#state-model) as versioned YAML with CEL guards
// (rotation.yaml, embedded) and its golden cases (testdata/). It is data:
// it imports no Go of this project; package internal/table composes it
// with the actions and Go facts it names. A pull request's diff of the table is the behaviour change a
// reviewer reads; package engine loads and proves it.
package rules

//go:generate go run ../cmd/rotationctl rules render -o ../docs/transitions.md
