package engine

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/google/cel-go/common/types"
)

// Decide returns one decision per machine for the snapshot. Guards are not
// evaluated: the facts a state's guards read index the lookup table the
// proof built, so the decision is exactly the proven one. A fact that
// cannot be evaluated (a malformed annotation) is unknown, and affects only
// the decisions that need it: a machine whose row is the same whatever the
// unknown facts' values decides as usual; one whose row depends on them,
// or whose state fact is unknown, is Undecided and takes no step
// (docs/design.md#bad-input).
func (e *Engine) Decide(s *Snapshot) []Decision {
	ev := evaluator{e: e, s: s, vals: make([]any, len(e.facts)), errs: make([]*FactError, len(e.facts))}
	out := make([]Decision, 0, len(e.machines))
	consulted := make([]FactValue, 0, e.maxConsulted)
	for _, m := range e.machines {
		var d Decision
		d, consulted = ev.decide(m, consulted)
		out = append(out, d)
	}
	return out
}

// DecideMachine is the decision of the named machine alone, exactly as
// Decide makes it: a pool with several rotations in flight decides the
// rotation machine once per slot and the window machine once
// (docs/design.md#throughput).
func (e *Engine) DecideMachine(s *Snapshot, name string) (Decision, error) {
	for _, m := range e.machines {
		if m.def.Name == name {
			ev := evaluator{e: e, s: s, vals: make([]any, len(e.facts)), errs: make([]*FactError, len(e.facts))}
			d, _ := ev.decide(m, make([]FactValue, 0, e.maxConsulted))
			return d, nil
		}
	}
	return Decision{}, fmt.Errorf("the table has no machine %q", name)
}

// decide is one machine's decision; the facts it consulted are appended
// to consulted (shared by the machines of one Decide) and the decision's
// Facts are that stretch of it.
func (ev *evaluator) decide(m *machine, consulted []FactValue) (Decision, []FactValue) {
	sv, err := ev.value(m.state)
	if err != nil {
		return Decision{Machine: m.def.Name, Undecided: err}, consulted
	}
	state := sv.(string)
	idx := m.states[state]
	first := len(consulted)
	consulted = append(consulted, FactValue{Name: m.state.def.Name, Value: sv})
	n := 0
	var unknown []int
	var why *FactError
	for i, f := range idx.facts {
		v, err := ev.value(f)
		if err != nil {
			unknown = append(unknown, i)
			why = cmp.Or(why, err)
			continue
		}
		consulted = append(consulted, FactValue{Name: f.def.Name, Value: v})
		n += idx.strides[i] * valueIndex(f, v)
	}
	facts := consulted[first:len(consulted):len(consulted)]
	r, ok := idx.only(n, unknown)
	if !ok {
		return Decision{Machine: m.def.Name, From: state, Facts: facts, Undecided: why}, consulted
	}
	t := idx.rows[r].t
	return Decision{
		Machine: m.def.Name, Transition: t.ID, From: state, To: t.To,
		Steps: t.Steps, Requeue: t.requeue, OnLost: t.onLost, Facts: facts,
	}, consulted
}

// only is the row the state takes at lookup index n whatever the values of
// the unknown facts (positions in idx.facts, whose stride n leaves at 0),
// and whether there is one.
func (idx *stateIndex) only(n int, unknown []int) (int, bool) {
	r := idx.lookup[n]
	if len(unknown) == 0 {
		return r, true
	}
	same := true
	var walk func(k, n int)
	walk = func(k, n int) {
		if k == len(unknown) {
			same = same && idx.lookup[n] == r
			return
		}
		i := unknown[k]
		for v := range len(idx.facts[i].domain()) {
			walk(k+1, n+v*idx.strides[i])
		}
	}
	walk(0, n)
	return r, same
}

// evaluator computes each fact at most once per Decide.
type evaluator struct {
	e    *Engine
	s    *Snapshot
	vals []any
	errs []*FactError
}

func (ev *evaluator) value(f *fact) (any, *FactError) {
	if v := ev.vals[f.index]; v != nil {
		return v, nil
	}
	if err := ev.errs[f.index]; err != nil {
		return nil, err
	}
	v, err := ev.compute(f)
	if err != nil {
		ev.errs[f.index] = err
		return nil, err
	}
	ev.vals[f.index] = v
	return v, nil
}

func (ev *evaluator) compute(f *fact) (any, *FactError) {
	var v any
	if f.direct != nil {
		v = f.direct(ev.s)
	} else if f.observer != nil {
		var err error
		if v, err = f.observer(ev.s); err != nil {
			return nil, ev.factError(f, err)
		}
	} else {
		out, _, err := f.prg.Eval(snapshotActivation{ev.s})
		if err != nil {
			return nil, ev.factError(f, err)
		}
		switch x := out.(type) {
		case types.Bool:
			v = bool(x)
		case types.String:
			v = string(x)
		default:
			return nil, ev.factError(f, fmt.Errorf("evaluated to %v", out))
		}
	}
	switch f.def.Type {
	case "bool":
		if _, ok := v.(bool); !ok {
			return nil, ev.factError(f, fmt.Errorf("observer returned %T, want bool", v))
		}
	case "enum":
		s, ok := v.(string)
		if !ok || !slices.Contains(f.def.Values, s) {
			return nil, ev.factError(f, fmt.Errorf("value %v is not one of %v", v, f.def.Values))
		}
	}
	return v, nil
}

func (ev *evaluator) factError(f *fact, err error) *FactError {
	in, on := map[string]any{}, map[string]string{}
	for _, name := range f.inputs {
		if i, ok := inputIndex[name]; ok && name != "now" { // the clock is no operator's to fix, and would defeat deduplication
			key := inputs[i].key
			if key == "" {
				key = name
			}
			in[key] = inputs[i].get(ev.s)
			if inputs[i].key != "" {
				on[key] = objectOf(name)
			}
		}
	}
	return &FactError{Fact: f.def.Name, Inputs: in, Objects: on, Err: err}
}

// objectOf is the kind of object an annotation input is read from.
func objectOf(input string) string {
	if strings.HasPrefix(input, "claim.") {
		return "NodeClaim"
	}
	return "NodePool"
}

func valueIndex(f *fact, v any) int {
	if f.def.Type == "bool" {
		if v.(bool) {
			return 1
		}
		return 0
	}
	for i, x := range f.def.Values {
		if x == v {
			return i
		}
	}
	return 0
}

// Evaluate computes the named fact on the snapshot exactly as Decide would,
// whether or not a decision consults it: operator tools show the facts a
// state's guards do not read (the start gate of a pool in flight, say).
func (e *Engine) Evaluate(s *Snapshot, name string) (any, error) {
	f, ok := e.byName[name]
	if !ok {
		return nil, fmt.Errorf("the table has no fact %q", name)
	}
	ev := evaluator{e: e, s: s, vals: make([]any, len(e.facts)), errs: make([]*FactError, len(e.facts))}
	v, err := ev.value(f)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// FactNames lists every fact of the table in enumeration order.
func (e *Engine) FactNames() []string {
	out := make([]string, len(e.facts))
	for i, f := range e.facts {
		out[i] = f.def.Name
	}
	return out
}

// MachineNames lists the table's machines in the order Decide decides
// them.
func (e *Engine) MachineNames() []string {
	out := make([]string, len(e.machines))
	for i, m := range e.machines {
		out[i] = m.def.Name
	}
	return out
}
