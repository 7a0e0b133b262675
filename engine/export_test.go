package engine

import "fmt"

// CheckByEnumeration re-proves a loaded table the slow way, one
// combination at a time with every guard of the state evaluated on it, and
// reports the first combination whose lookup entry the tree walk filled
// differently, or on which no guard or more than one matches.
func CheckByEnumeration(e *Engine) error {
	for _, m := range e.machines {
		for _, s := range m.state.def.Values {
			idx := m.states[s]
			for n := range idx.lookup {
				assign := idx.assignment(n)
				assign[m.state.def.Name] = s
				var matched []string
				for _, r := range idx.rows {
					out, _, err := r.guard.Eval(assign)
					if err != nil {
						return fmt.Errorf("%s %s %v: %s: %w", m.def.Name, s, assign, r.t.ID, err)
					}
					if b, ok := out.Value().(bool); ok && b {
						matched = append(matched, r.t.ID)
					}
				}
				if got := idx.rows[idx.lookup[n]].t.ID; len(matched) != 1 || matched[0] != got {
					return fmt.Errorf("%s %s %v: the lookup takes %s, the guards match %v", m.def.Name, s, assign, got, matched)
				}
			}
		}
	}
	return nil
}
