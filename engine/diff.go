package engine

import (
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
)

// Choice is what a table decides for one assignment of one state's facts:
// the transition, its target, its steps and when it comes back.
type Choice struct {
	Transition string        `json:"transition"`
	To         string        `json:"to"`
	Steps      []Step        `json:"steps"`
	Requeue    time.Duration `json:"requeue"`
	OnLost     time.Duration `json:"onLost"`
}

// Difference is one assignment on which two tables decide differently.
// Facts are the union of the facts either table reads in that state, by
// name; Base or Head is nil where that table has no such machine or
// state, or cannot take one of the values (a value its fact does not
// enumerate).
type Difference struct {
	Machine string      `json:"machine"`
	State   string      `json:"state"`
	Facts   []FactValue `json:"facts"`
	Base    *Choice     `json:"base"`
	Head    *Choice     `json:"head"`
}

// Diff enumerates, for every machine and state of either table, every
// assignment of the facts either table reads there, and returns those on
// which the two choose a different transition, target, steps, requeue or
// onLost: what a
// table change does, combination by combination. Two equal tables have no
// difference.
func Diff(base, head *Engine) []Difference {
	var out []Difference
	for _, name := range unionNames(machineNames(base), machineNames(head)) {
		bm, hm := base.machine(name), head.machine(name)
		for _, state := range unionNames(stateNames(bm), stateNames(hm)) {
			out = append(out, diffState(name, state, bm.indexOf(state), hm.indexOf(state))...)
		}
	}
	return out
}

func diffState(machine, state string, b, h *stateIndex) []Difference {
	facts := unionFacts(b, h)
	var out []Difference
	forEachAssignment(facts, func(a []FactValue) {
		bc, hc := b.choose(a), h.choose(a)
		if sameChoice(bc, hc) {
			return
		}
		out = append(out, Difference{Machine: machine, State: state, Facts: slices.Clone(a), Base: bc, Head: hc})
	})
	return out
}

// domainFact is one fact of the union with the union of its values.
type domainFact struct {
	name   string
	values []any
}

func unionFacts(idxs ...*stateIndex) []domainFact {
	byName := map[string]*domainFact{}
	var names []string
	for _, idx := range idxs {
		if idx == nil {
			continue
		}
		for _, f := range idx.facts {
			d := byName[f.def.Name]
			if d == nil {
				d = &domainFact{name: f.def.Name}
				byName[f.def.Name] = d
				names = append(names, f.def.Name)
			}
			for _, v := range f.domain() {
				if !slices.Contains(d.values, v) {
					d.values = append(d.values, v)
				}
			}
		}
	}
	sort.Strings(names)
	out := make([]domainFact, len(names))
	for i, n := range names {
		out[i] = *byName[n]
	}
	return out
}

// forEachAssignment calls f with every assignment of facts (the slice is
// reused between calls).
func forEachAssignment(facts []domainFact, f func([]FactValue)) {
	a := make([]FactValue, len(facts))
	var rec func(i int)
	rec = func(i int) {
		if i == len(facts) {
			f(a)
			return
		}
		for _, v := range facts[i].values {
			a[i] = FactValue{Name: facts[i].name, Value: v}
			rec(i + 1)
		}
	}
	rec(0)
}

// choose is the row this state takes for the assignment (facts it does not
// read are ignored); nil for a state the table lacks or a value one of its
// facts cannot take.
func (idx *stateIndex) choose(a []FactValue) *Choice {
	if idx == nil {
		return nil
	}
	n := 0
	for i, f := range idx.facts {
		pos := -1
		for _, fv := range a {
			if fv.Name == f.def.Name {
				pos = slices.Index(f.domain(), fv.Value)
				break
			}
		}
		if pos < 0 {
			return nil
		}
		n += idx.strides[i] * pos
	}
	t := idx.rows[idx.lookup[n]].t
	return &Choice{Transition: t.ID, To: t.To, Steps: t.Steps, Requeue: t.requeue, OnLost: t.onLost}
}

func sameChoice(a, b *Choice) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Transition == b.Transition && a.To == b.To && reflect.DeepEqual(a.Steps, b.Steps) &&
		a.Requeue == b.Requeue && a.OnLost == b.OnLost
}

func (e *Engine) machine(name string) *machine {
	for _, m := range e.machines {
		if m.def.Name == name {
			return m
		}
	}
	return nil
}

func (m *machine) indexOf(state string) *stateIndex {
	if m == nil {
		return nil
	}
	return m.states[state]
}

func machineNames(e *Engine) []string {
	out := make([]string, len(e.machines))
	for i, m := range e.machines {
		out[i] = m.def.Name
	}
	return out
}

func stateNames(m *machine) []string {
	if m == nil {
		return nil
	}
	return slices.Clone(m.state.def.Values)
}

// unionNames is a's names then b's not in a, in order.
func unionNames(a, b []string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// diffGroup is the differences that share a state and a pair of choices.
type diffGroup struct {
	key   string
	base  *Choice
	head  *Choice
	facts [][]FactValue
}

// RenderDiff writes differences as Markdown for a pull request: a header
// naming both tables, a warning when they behave differently under the
// same version, the facts defined differently, then one section per state
// and pair of choices with the assignments that take it.
func RenderDiff(w io.Writer, baseSrc, headSrc string, base, head *Engine, d []Difference) error {
	groups := groupDifferences(d)
	defs := DefinitionChanges(base, head)
	p := &printer{w: w}
	bv, hv := base.Version(), head.Version()
	p.f("### rules diff: %s (version %d) → %s (version %d)\n\n", baseSrc, bv, headSrc, hv)
	if bv == hv && (len(d) > 0 || len(defs) > 0) {
		p.f("**Warning: the two tables behave differently but carry the same version %d: bump `version` in %s.**\n\n", hv, headSrc)
	}
	if len(defs) > 0 {
		p.f("Facts defined differently (which observations take which value): `%s`.\n\n", strings.Join(defs, "`, `"))
	}
	if len(d) == 0 {
		p.f("No difference in what they decide: the two tables choose the same transition, target, steps, requeue and onLost on every combination.\n")
		return p.err
	}
	p.f("%d combinations decide differently, in %d groups.\n", len(d), len(groups))
	for _, g := range groups {
		p.f("\n#### %s (%d)\n\n", g.key, len(g.facts))
		if g.base != nil && g.head != nil && g.base.Transition == g.head.Transition {
			p.f("- base: to %s, steps %s, requeue %s, onLost %s\n- head: to %s, steps %s, requeue %s, onLost %s\n\n",
				g.base.To, steps(g.base.Steps), g.base.Requeue, g.base.OnLost, g.head.To, steps(g.head.Steps), g.head.Requeue, g.head.OnLost)
		}
		for _, fs := range g.facts {
			parts := make([]string, len(fs))
			for i, f := range fs {
				parts[i] = fmt.Sprintf("%s=%v", f.Name, f.Value)
			}
			p.f("- `%s`\n", strings.Join(parts, " "))
		}
	}
	return p.err
}

// groupDifferences gathers the differences that share a state and a pair
// of choices, in the order they first appear.
func groupDifferences(d []Difference) []*diffGroup {
	var groups []*diffGroup
	byKey := map[string]*diffGroup{}
	for _, x := range d {
		key := fmt.Sprintf("%s/%s: %s → %s", x.Machine, x.State, choiceName(x.Base), choiceName(x.Head))
		if x.Base != nil && x.Head != nil && x.Base.Transition == x.Head.Transition {
			key = fmt.Sprintf("%s/%s: %s, its target, steps or requeue changed", x.Machine, x.State, x.Base.Transition)
		}
		g := byKey[key]
		if g == nil {
			g = &diffGroup{key: key, base: x.Base, head: x.Head}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.facts = append(g.facts, x.Facts)
	}
	return groups
}

func choiceName(c *Choice) string {
	if c == nil {
		return "(none)"
	}
	return c.Transition
}
