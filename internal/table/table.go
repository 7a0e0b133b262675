// Package table composes the shipped rules table (package rules, pure data)
// with the Go it names: the action catalog of package actions and the Go
// facts of package census. Load is the one place the table is checked
// against them, so the controller and rotationctl decide with the same
// proven engine (docs/design.md#state-model).
package table

import (
	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/rules"
)

// FactFuncs are the Go facts the table may name with `observer:`.
func FactFuncs() map[string]engine.FactFunc {
	return map[string]engine.FactFunc{"retryDue": census.RetryDue}
}

// Load compiles and proves the shipped table.
func Load() (*engine.Engine, error) { return LoadTable(rules.Table) }

// LoadTable compiles and proves a table against the action catalog and the
// Go facts: a table naming an unknown action, argument or fact func does
// not load.
func LoadTable(data []byte) (*engine.Engine, error) {
	return engine.Load(data, engine.Options{Catalog: actions.Catalog(), FactFuncs: FactFuncs()})
}
