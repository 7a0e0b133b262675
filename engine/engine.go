package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Engine is a loaded, compiled and proven table, ready to decide.
type Engine struct {
	table    *Table
	facts    []*fact
	byName   map[string]*fact
	machines []*machine
	// maxConsulted bounds the facts one Decide reports: per machine, the
	// state fact plus the most facts any of its states reads.
	maxConsulted int
}

// machine is a compiled state machine with a lookup table per state.
type machine struct {
	def    *Machine
	state  *fact
	rows   []*row
	states map[string]*stateIndex
}

// stateIndex maps every assignment of the facts a state's guards read to
// the one row that matches it: the proof, kept for Decide.
type stateIndex struct {
	facts   []*fact // enumerated, in order
	strides []int
	rows    []*row
	lookup  []int // row per assignment index
}

// Load parses, compiles and proves a table. It refuses a table with a
// hole, an overlap, a dead row, an unknown action or a guard that is not a
// bool over facts, with an error naming the state, assignment and rows.
func Load(data []byte, opts Options) (*Engine, error) {
	t, err := Parse(data)
	if err != nil {
		return nil, err
	}
	facts, err := compileFacts(t.Facts, opts.FactFuncs)
	if err != nil {
		return nil, err
	}
	e := &Engine{table: t, facts: facts, byName: map[string]*fact{}}
	for _, f := range facts {
		e.byName[f.def.Name] = f
	}
	env, err := factEnv(facts)
	if err != nil {
		return nil, fmt.Errorf("rules: building the guard environment: %w", err)
	}
	for i := range t.Machines {
		m, err := e.compileMachine(&t.Machines[i], env, opts.Catalog)
		if err != nil {
			return nil, err
		}
		e.machines = append(e.machines, m)
	}
	if err := e.prove(); err != nil {
		return nil, err
	}
	for _, m := range e.machines {
		most := 0
		for _, idx := range m.states {
			most = max(most, len(idx.facts))
		}
		e.maxConsulted += 1 + most
	}
	return e, nil
}

func (e *Engine) compileMachine(def *Machine, env celEnv, catalog Catalog) (*machine, error) {
	state := e.byName[def.StateFact]
	if state == nil || state.def.Type != "enum" {
		return nil, fmt.Errorf("rules: line %d: machine %q: state fact %q must be an enum fact", def.line, def.Name, def.StateFact)
	}
	m := &machine{def: def, state: state, states: map[string]*stateIndex{}}
	var errs []error
	if def.Scope != "" && def.Scope != ScopePool && def.Scope != ScopeSlot {
		errs = append(errs, fmt.Errorf("rules: line %d: machine %q: scope %q is neither %s nor %s", def.line, def.Name, def.Scope, ScopePool, ScopeSlot))
	}
	for i := range def.Transitions {
		tr := &def.Transitions[i]
		for _, s := range append(append([]string{}, tr.From...), tr.To) {
			if !slices.Contains(state.def.Values, s) {
				errs = append(errs, fmt.Errorf("rules: line %d: transition %q: %q is not a state of %s (%v)", tr.line, tr.ID, s, def.StateFact, state.def.Values))
			}
		}
		r, err := compileGuard(env, tr, e.byName)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := catalog.validateSteps(tr); err != nil {
			errs = append(errs, err)
		}
		m.rows = append(m.rows, r)
	}
	return m, errors.Join(errs...)
}

// The scopes of a machine's decisions (Machine.Scope).
const (
	ScopePool = "pool"
	ScopeSlot = "slot"
)

// Scope is the named machine's scope, ScopePool unless the table says
// ScopeSlot; "" when the table has no such machine.
func (e *Engine) Scope(name string) string {
	for _, m := range e.machines {
		if m.def.Name == name {
			if m.def.Scope == ScopeSlot {
				return ScopeSlot
			}
			return ScopePool
		}
	}
	return ""
}

// Version is the table's behaviour version.
func (e *Engine) Version() int { return e.table.Version }

// Table returns the decoded table (read-only).
func (e *Engine) Table() *Table { return e.table }

// Decision is what one machine does this pass.
type Decision struct {
	Machine    string        `json:"machine"`
	Transition string        `json:"transition"`
	From       string        `json:"from"`
	To         string        `json:"to"`
	Steps      []Step        `json:"steps"`
	Requeue    time.Duration `json:"requeue"`
	OnLost     time.Duration `json:"onLost"`
	// Facts are the facts this decision consulted: the state fact first,
	// then those its guards read, in enumeration order; a fact that could
	// not be evaluated is left out.
	Facts []FactValue `json:"facts"`
	// Undecided is the fact, unknown for a malformed input, that the row
	// depends on: the machine takes no step (no Transition, no Steps).
	Undecided *FactError `json:"undecided,omitempty"`
}

// FactValue is one consulted fact.
type FactValue struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}
