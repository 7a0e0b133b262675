package engine

import (
	"fmt"
	"sort"
	"strings"
)

// FactError reports a fact that could not be evaluated for a snapshot: a
// malformed annotation, or a value outside the fact's declared domain. The
// machine whose row depends on it takes no step; the controller says so
// in a Warning Event.
type FactError struct {
	Fact string
	// Inputs are the snapshot values the fact read: by annotation key for
	// raw annotations (what an operator has to look at), else by input name.
	Inputs map[string]any
	// Objects names, per annotation key of Inputs, the kind it is read
	// from: NodePool, or NodeClaim (the anchored claim).
	Objects map[string]string
	Err     error
}

func (e *FactError) Error() string {
	return fmt.Sprintf("fact %s: %v (inputs: %s)", e.Fact, e.Err, formatAssignment(e.Inputs))
}

func (e *FactError) Unwrap() error { return e.Err }

// ProofError reports why a table is not complete, deterministic or live.
type ProofError struct {
	Machine, State string
	Kind           string // hole, overlap or dead
	// Assignment is the first block of combinations, in the lookup's
	// order, with the fault: the facts it fixes; a fact it leaves out is
	// any value (the guards are decided without it).
	Assignment map[string]any
	Rows       []string
}

func (e *ProofError) Error() string {
	switch e.Kind {
	case "hole":
		return fmt.Sprintf("rules: machine %s, state %s: no transition matches %s (incomplete)", e.Machine, e.State, formatAssignment(e.Assignment))
	case "overlap":
		return fmt.Sprintf("rules: machine %s, state %s: transitions %s all match %s (not deterministic)", e.Machine, e.State, strings.Join(e.Rows, ", "), formatAssignment(e.Assignment))
	}
	return fmt.Sprintf("rules: machine %s: transition %s never matches any combination of facts (dead row)", e.Machine, strings.Join(e.Rows, ", "))
}

// formatAssignment renders {a=true, b="x"} in key order.
func formatAssignment(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		switch v := m[k].(type) {
		case string:
			parts[i] = fmt.Sprintf("%s=%q", k, v)
		default:
			parts[i] = fmt.Sprintf("%s=%v", k, v)
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
