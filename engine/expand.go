package engine

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Expand writes the whole enumerated fact space, one line per assignment:
// machine, state, the facts its guards read, and the transition that
// matches. A guard change shows up in review as the lines it moves.
func (e *Engine) Expand(w io.Writer) error {
	for _, m := range e.machines {
		if err := m.scopeLine(w); err != nil {
			return err
		}
		for _, s := range m.state.def.Values {
			idx := m.states[s]
			if _, err := fmt.Fprintf(w, "# %s %s: %d combinations of [%s]\n", m.def.Name, s, len(idx.lookup), strings.Join(idx.factNames(), " ")); err != nil {
				return err
			}
			for n, r := range idx.lookup {
				a := idx.assignment(n)
				parts := make([]string, len(idx.facts))
				for i, f := range idx.facts {
					parts[i] = fmt.Sprintf("%s=%v", f.def.Name, a[f.def.Name])
				}
				if _, err := fmt.Fprintf(w, "%s %s %s -> %s\n", m.def.Name, s, strings.Join(parts, " "), idx.rows[r].t.ID); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ExpandCompact writes the fact space as Expand does, with every block of
// combinations that share their first facts and take the same transition
// whatever the others are written as one line, the others as `*`. It
// holds what Expand holds in the lines a reviewer can read: the golden
// copy of the shipped table's fact space is this form.
func (e *Engine) ExpandCompact(w io.Writer) error {
	for _, m := range e.machines {
		if err := m.scopeLine(w); err != nil {
			return err
		}
		for _, s := range m.state.def.Values {
			idx := m.states[s]
			if _, err := fmt.Fprintf(w, "# %s %s: %d combinations of [%s]; * is any value\n", m.def.Name, s, len(idx.lookup), strings.Join(idx.factNames(), " ")); err != nil {
				return err
			}
			if err := idx.compact(w, m.def.Name+" "+s, 0, 0, len(idx.lookup), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// compact writes the block of size combinations from base whose first
// depth facts are parts: one line when it takes one transition, else a
// block per value of the next fact.
func (idx *stateIndex) compact(w io.Writer, lead string, depth, base, size int, parts []string) error {
	block := idx.lookup[base : base+size]
	if !slices.ContainsFunc(block, func(r int) bool { return r != block[0] }) {
		line := slices.Clone(parts)
		for _, f := range idx.facts[depth:] {
			line = append(line, f.def.Name+"=*")
		}
		_, err := fmt.Fprintf(w, "%s %s -> %s\n", lead, strings.Join(line, " "), idx.rows[block[0]].t.ID)
		return err
	}
	f, stride := idx.facts[depth], idx.strides[depth]
	for i, v := range f.domain() {
		if err := idx.compact(w, lead, depth+1, base+i*stride, stride, append(slices.Clip(parts), fmt.Sprintf("%s=%v", f.def.Name, v))); err != nil {
			return err
		}
	}
	return nil
}

func (idx *stateIndex) factNames() []string {
	out := make([]string, len(idx.facts))
	for i, f := range idx.facts {
		out[i] = f.def.Name
	}
	return out
}

// TransitionIDs lists every transition id, in table order.
func (e *Engine) TransitionIDs() []string {
	var out []string
	for _, m := range e.machines {
		for _, r := range m.rows {
			out = append(out, r.t.ID)
		}
	}
	return out
}

// Stats summarises what the proof covered.
type Stats struct {
	Machines, States, Transitions, Combinations int
}

// Stats counts machines, states, transitions and enumerated combinations.
func (e *Engine) Stats() Stats {
	var s Stats
	for _, m := range e.machines {
		s.Machines++
		s.Transitions += len(m.rows)
		for _, idx := range m.states {
			s.States++
			s.Combinations += len(idx.lookup)
		}
	}
	return s
}

// scopeLine says, for a machine decided once per rotation slot, that it is.
func (m *machine) scopeLine(w io.Writer) error {
	if m.def.Scope != ScopeSlot {
		return nil
	}
	_, err := fmt.Fprintf(w, "# %s: decided once per rotation slot of the pool\n", m.def.Name)
	return err
}
