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

// Load compiles and proves the shipped table, and checks that it has every
// machine, state, fact and transition the Go code linked into this binary
// names (engine.UsesState and its kin): a rename in the rules file that
// the Go code did not follow refuses to start, naming each site.
func Load() (*engine.Engine, error) {
	e, err := LoadTable(rules.Table)
	if err != nil {
		return nil, err
	}
	if err := e.CheckNames(engine.NameUses()); err != nil {
		return nil, err
	}
	return e, nil
}

// LoadTable compiles and proves a table against the action catalog and the
// Go facts: a table naming an unknown action, argument or fact func does
// not load.
func LoadTable(data []byte) (*engine.Engine, error) {
	return engine.Load(data, engine.Options{Catalog: actions.Catalog(), FactFuncs: FactFuncs()})
}
