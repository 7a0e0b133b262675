package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strings"
)

// Fingerprint is a digest of the table's behaviour: every fact's
// definition (type, values, expression or Go observer, changesAt) and
// every combination of every state's facts with the transition it takes,
// its target, steps, requeue and onLost. Prose — descriptions, cites,
// comments — and the order of rows do not enter it. Two tables with the
// same fingerprint decide alike on every observation; a change to it is a
// behaviour change, which must bump the table's version.
func (e *Engine) Fingerprint() string {
	h := sha256.New()
	for _, f := range e.facts {
		fmt.Fprintf(h, "fact %s %s\n", f.def.Name, f.definition())
	}
	for _, m := range e.machines {
		if m.def.Scope == ScopeSlot {
			// deciding once per slot is behaviour (the pool-scoped
			// default writes nothing, so older tables keep their digest)
			fmt.Fprintf(h, "machine %s per slot\n", m.def.Name)
		}
		for _, s := range m.state.def.Values {
			m.states[s].fingerprint(h, m.def.Name+" "+s)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fingerprint writes one line per combination of the state's facts.
func (idx *stateIndex) fingerprint(h hash.Hash, lead string) {
	choices := make([]string, len(idx.rows))
	for i, r := range idx.rows {
		steps, _ := json.Marshal(r.t.Steps) // map keys sorted: canonical
		choices[i] = fmt.Sprintf("%s to=%s requeue=%s onLost=%s steps=%s", r.t.ID, r.t.To, r.t.requeue, r.t.onLost, steps)
	}
	for n, r := range idx.lookup {
		a := idx.assignment(n)
		fmt.Fprint(h, lead)
		for _, f := range idx.facts {
			fmt.Fprintf(h, " %s=%v", f.def.Name, a[f.def.Name])
		}
		fmt.Fprintf(h, " -> %s\n", choices[r])
	}
}

// squash collapses runs of white space, so re-wrapping an expression is
// not a change.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// DefinitionChanges names the facts the two tables define differently —
// type, values, expression, Go observer or changesAt — and those only one
// of them has. Diff cannot show such a change: it moves which
// observations take which value of a fact, not what a value decides.
func DefinitionChanges(base, head *Engine) []string {
	var out []string
	for _, name := range unionNames(base.FactNames(), head.FactNames()) {
		b, h := base.byName[name], head.byName[name]
		switch {
		case b == nil:
			out = append(out, name+" (only in head)")
		case h == nil:
			out = append(out, name+" (only in base)")
		case b.definition() != h.definition():
			out = append(out, name)
		}
	}
	return out
}

// definition is the fact's behaviour as text: what Fingerprint digests.
func (f *fact) definition() string {
	return fmt.Sprintf("%s [%s] expr=%s observer=%s changesAt=[%s]", f.def.Type,
		strings.Join(f.def.Values, " "), squash(f.def.Expr), f.def.Observer, squash(strings.Join(f.def.ChangesAt, "; ")))
}
