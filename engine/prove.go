package engine

import (
	"errors"
	"fmt"
	"slices"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

type celEnv = *cel.Env

// prove covers, for every state of every machine, each combination of the
// finite domains of the facts that state's guards read — walking them as
// a tree, so a block of combinations its first facts already decide is
// checked once (prover) — and checks that exactly one transition matches
// each (complete and deterministic) and that every transition matches some
// combination (no dead row).
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
	p := prover{m: m, idx: idx, state: state, live: live, assign: map[string]any{m.state.def.Name: state}}
	if err := p.decide(0, 0, size, idx.rows); err != nil {
		return nil, err
	}
	return idx, nil
}

// prover walks one state's fact space as a tree, the first fact at the
// root, in the order of the lookup index. A node whose assigned facts
// already decide every guard (the others left unknown to CEL's partial
// evaluation) is a block of combinations that all take the same rows, so
// it is checked once and filled whole: the proof costs what the guards'
// structure costs, not the product of the domains.
type prover struct {
	m      *machine
	idx    *stateIndex
	state  string
	live   map[*row]bool
	assign map[string]any
}

// decide checks the block of size combinations starting at base whose
// first depth facts are assigned; rows are the guards not yet false.
func (p *prover) decide(depth, base, size int, rows []*row) error {
	facts := p.idx.facts
	unknown := make([]*cel.AttributePatternType, 0, len(facts)-depth)
	for _, f := range facts[depth:] {
		unknown = append(unknown, cel.AttributePattern(f.def.Name))
	}
	vars, err := cel.PartialVars(p.assign, unknown...)
	if err != nil {
		return fmt.Errorf("rules: machine %s, state %s: %w", p.m.def.Name, p.state, err)
	}
	var matched, open []*row
	for _, r := range rows {
		out, _, err := r.guard.Eval(vars)
		switch {
		case err != nil:
			return fmt.Errorf("rules: line %d: transition %q guard failed on %s: %w", r.t.line, r.t.ID, p.formatAssigned(), err)
		case types.IsUnknown(out):
			open = append(open, r)
		case out == types.True:
			matched = append(matched, r)
		}
	}
	if len(open) > 0 {
		if depth == len(facts) {
			return fmt.Errorf("rules: machine %s, state %s: transition %q guard is undecided with every fact assigned", p.m.def.Name, p.state, open[0].t.ID)
		}
		f, stride := facts[depth], p.idx.strides[depth]
		live := append(matched, open...)
		for i, v := range f.domain() {
			p.assign[f.def.Name] = v
			if err := p.decide(depth+1, base+i*stride, stride, live); err != nil {
				return err
			}
		}
		delete(p.assign, f.def.Name)
		return nil
	}
	switch len(matched) {
	case 0:
		return &ProofError{Machine: p.m.def.Name, State: p.state, Kind: "hole", Assignment: p.assigned()}
	case 1:
		p.live[matched[0]] = true
		n := rowIndex(p.idx.rows, matched[0])
		for i := base; i < base+size; i++ {
			p.idx.lookup[i] = n
		}
		return nil
	}
	labels := make([]string, len(matched))
	for i, r := range matched {
		labels[i] = r.label()
	}
	return &ProofError{Machine: p.m.def.Name, State: p.state, Kind: "overlap", Assignment: p.assigned(), Rows: labels}
}

// assigned is the facts assigned at the current node, without the state.
func (p *prover) assigned() map[string]any {
	out := make(map[string]any, len(p.assign))
	for k, v := range p.assign {
		if k != p.m.state.def.Name {
			out[k] = v
		}
	}
	return out
}

func (p *prover) formatAssigned() string { return formatAssignment(p.assigned()) }

// assignment decodes an enumeration index into fact values.
func (idx *stateIndex) assignment(n int) map[string]any {
	a := make(map[string]any, len(idx.facts)+1)
	for i, f := range idx.facts {
		d := f.domain()
		a[f.def.Name] = d[(n/idx.strides[i])%len(d)]
	}
	return a
}

func rowIndex(rows []*row, r *row) int {
	for i, x := range rows {
		if x == r {
			return i
		}
	}
	return -1
}
