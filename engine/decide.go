package engine

import (
	"fmt"
	"slices"

	"github.com/google/cel-go/common/types"
)

// Decide returns one decision per machine for the snapshot. Guards are not
// evaluated: the facts a state's guards read index the lookup table the
// proof built, so the decision is exactly the proven one. A fact that cannot
// be evaluated returns a *FactError and no decision.
func (e *Engine) Decide(s *Snapshot) ([]Decision, error) {
	ev := evaluator{e: e, s: s, vals: make([]any, len(e.facts))}
	out := make([]Decision, 0, len(e.machines))
	consulted := make([]FactValue, 0, e.maxConsulted)
	for _, m := range e.machines {
		sv, err := ev.value(m.state)
		if err != nil {
			return nil, err
		}
		state := sv.(string)
		idx := m.states[state]
		n := 0
		first := len(consulted)
		consulted = append(consulted, FactValue{Name: m.state.def.Name, Value: sv})
		for i, f := range idx.facts {
			v, err := ev.value(f)
			if err != nil {
				return nil, err
			}
			consulted = append(consulted, FactValue{Name: f.def.Name, Value: v})
			n += idx.strides[i] * valueIndex(f, v)
		}
		facts := consulted[first:len(consulted):len(consulted)]
		t := idx.rows[idx.lookup[n]].t
		out = append(out, Decision{
			Machine: m.def.Name, Transition: t.ID, From: state, To: t.To,
			Steps: t.Steps, Requeue: t.requeue, OnLost: t.onLost, Facts: facts,
		})
	}
	return out, nil
}

// evaluator computes each fact at most once per Decide.
type evaluator struct {
	e    *Engine
	s    *Snapshot
	vals []any
}

func (ev *evaluator) value(f *fact) (any, error) {
	if v := ev.vals[f.index]; v != nil {
		return v, nil
	}
	v, err := ev.compute(f)
	if err != nil {
		return nil, err
	}
	ev.vals[f.index] = v
	return v, nil
}

func (ev *evaluator) compute(f *fact) (any, error) {
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
	in := map[string]any{}
	for _, name := range f.inputs {
		if i, ok := inputIndex[name]; ok && name != "now" { // the clock is no operator's to fix, and would defeat deduplication
			key := inputs[i].key
			if key == "" {
				key = name
			}
			in[key] = inputs[i].get(ev.s)
		}
	}
	return &FactError{Fact: f.def.Name, Inputs: in, Err: err}
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
	ev := evaluator{e: e, s: s, vals: make([]any, len(e.facts))}
	return ev.value(f)
}

// FactNames lists every fact of the table in enumeration order.
func (e *Engine) FactNames() []string {
	out := make([]string, len(e.facts))
	for i, f := range e.facts {
		out[i] = f.def.Name
	}
	return out
}
