package engine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/google/cel-go/cel"
)

type celEnv = *cel.Env

// prove enumerates, for every state of every machine, each combination of
// the finite domains of the facts that state's guards read, and checks that
// exactly one transition matches each (complete and deterministic) and that
// every transition matches some combination (no dead row).
func (e *Engine) prove() error {
	var errs []error
	for _, m := range e.machines {
		live := map[*row]bool{}
		for _, s := range m.state.def.Values {
			idx, err := m.index(s, e.byName, live)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			m.states[s] = idx
		}
		for _, r := range m.rows {
			if !live[r] && len(errs) == 0 {
				errs = append(errs, &ProofError{Machine: m.def.Name, Kind: "dead", Rows: []string{r.label()}})
			}
		}
	}
	return errors.Join(errs...)
}

// index builds the lookup table of one state, failing on the first hole or
// overlap.
func (m *machine) index(state string, facts map[string]*fact, live map[*row]bool) (*stateIndex, error) {
	idx := &stateIndex{}
	seen := map[string]bool{m.state.def.Name: true}
	for _, r := range m.rows {
		if !slices.Contains(r.t.From, state) {
			continue
		}
		idx.rows = append(idx.rows, r)
		for _, name := range r.facts {
			if !seen[name] {
				seen[name] = true
				idx.facts = append(idx.facts, facts[name])
			}
		}
	}
	size := 1
	idx.strides = make([]int, len(idx.facts))
	for i := len(idx.facts) - 1; i >= 0; i-- {
		idx.strides[i] = size
		size *= len(idx.facts[i].domain())
	}
	idx.lookup = make([]int, size)
	for n := 0; n < size; n++ {
		assign := idx.assignment(n)
		assign[m.state.def.Name] = state
		matched := []*row{}
		for _, r := range idx.rows {
			ok, err := evalGuard(r, assign)
			if err != nil {
				return nil, err
			}
			if ok {
				matched = append(matched, r)
			}
		}
		delete(assign, m.state.def.Name)
		switch len(matched) {
		case 0:
			return nil, &ProofError{Machine: m.def.Name, State: state, Kind: "hole", Assignment: assign}
		case 1:
			live[matched[0]] = true
			idx.lookup[n] = rowIndex(idx.rows, matched[0])
		default:
			labels := make([]string, len(matched))
			for i, r := range matched {
				labels[i] = r.label()
			}
			return nil, &ProofError{Machine: m.def.Name, State: state, Kind: "overlap", Assignment: assign, Rows: labels}
		}
	}
	return idx, nil
}

// assignment decodes an enumeration index into fact values.
func (idx *stateIndex) assignment(n int) map[string]any {
	a := make(map[string]any, len(idx.facts)+1)
	for i, f := range idx.facts {
		d := f.domain()
		a[f.def.Name] = d[(n/idx.strides[i])%len(d)]
	}
	return a
}

func evalGuard(r *row, assign map[string]any) (bool, error) {
	out, _, err := r.guard.Eval(assign)
	if err != nil {
		return false, fmt.Errorf("rules: line %d: transition %q guard failed on %s: %w", r.t.line, r.t.ID, formatAssignment(assign), err)
	}
	b, ok := out.Value().(bool)
	return ok && b, nil
}

func rowIndex(rows []*row, r *row) int {
	for i, x := range rows {
		if x == r {
			return i
		}
	}
	return -1
}
