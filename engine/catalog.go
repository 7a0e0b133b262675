package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ArgKind is the type of an action argument.
type ArgKind string

const (
	ArgString     ArgKind = "string"
	ArgBool       ArgKind = "bool"
	ArgStringList ArgKind = "[]string"
)

// ArgSpec declares one argument an action accepts.
type ArgSpec struct {
	Kind     ArgKind
	Values   []string // when set, every string must be one of these
	Required bool
}

// Role marks the actions the ordering rules speak about
// (docs/design.md#anchor-protocol).
type Role string

const (
	RoleNone Role = ""
	// RoleAnchorWrite: writes the anchor; must be a start row's first step.
	RoleAnchorWrite Role = "anchor-write"
	// RoleAnchorEnd: clears or releases the anchor; only announcements may
	// follow it, because it is the last write of a rotation.
	RoleAnchorEnd Role = "anchor-end"
	// RoleAnnounce: a metric, Event or log line.
	RoleAnnounce Role = "announce"
)

// ActionSpec declares one action the table may name.
type ActionSpec struct {
	Name        string
	Description string
	Args        map[string]ArgSpec
	// Reports: the action reports whether this pass won what it wrote, so
	// a step may elect on it.
	Reports bool
	Role    Role
}

// Catalog is the fixed set of actions, keyed by name.
type Catalog map[string]ActionSpec

// validateSteps checks a transition's steps against the catalog and the
// ordering rules: the anchor write comes first, and nothing but
// announcements follows the write that ends the anchor.
func (c Catalog) validateSteps(tr *Transition) error {
	anchorEnded := ""
	for i, st := range tr.Steps {
		where := fmt.Sprintf("rules: line %d: transition %q step %d (%s)", tr.line, tr.ID, i+1, st.Action)
		spec, ok := c[st.Action]
		if !ok {
			return fmt.Errorf("%s: unknown action; known: %s", where, strings.Join(c.names(), ", "))
		}
		if st.Elect && !spec.Reports {
			return fmt.Errorf("%s: elect is set but the action reports no outcome to elect on", where)
		}
		if err := spec.checkArgs(st.Args); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if spec.Role == RoleAnchorWrite && i != 0 {
			return fmt.Errorf("%s: the anchor is written before any other side effect, so it must be the first step", where)
		}
		if anchorEnded != "" && spec.Role != RoleAnnounce {
			return fmt.Errorf("%s: only announcements may follow %s, the anchor is cleared last", where, anchorEnded)
		}
		if spec.Role == RoleAnchorEnd {
			anchorEnded = st.Action
		}
	}
	return nil
}

func (s ActionSpec) checkArgs(args map[string]any) error {
	for name, a := range s.Args {
		if _, ok := args[name]; a.Required && !ok {
			return fmt.Errorf("missing required argument %q", name)
		}
	}
	for _, name := range sortedKeys(args) {
		a, ok := s.Args[name]
		if !ok {
			return fmt.Errorf("unknown argument %q", name)
		}
		if err := a.check(name, args[name]); err != nil {
			return err
		}
	}
	return nil
}

func (a ArgSpec) check(name string, v any) error {
	var strs []string
	switch a.Kind {
	case ArgBool:
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("argument %q must be a bool, not %T", name, v)
		}
		return nil
	case ArgString:
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("argument %q must be a string, not %T", name, v)
		}
		strs = []string{s}
	case ArgStringList:
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("argument %q must be a list of strings, not %T", name, v)
		}
		for _, e := range list {
			s, ok := e.(string)
			if !ok {
				return fmt.Errorf("argument %q must be a list of strings; found %T", name, e)
			}
			strs = append(strs, s)
		}
	}
	for _, s := range strs {
		if len(a.Values) > 0 && !slices.Contains(a.Values, s) {
			return fmt.Errorf("argument %q: %q is not one of %s", name, s, strings.Join(a.Values, ", "))
		}
	}
	return nil
}

func (c Catalog) names() []string { return sortedKeys(c) }

// sortedKeys lists a map's keys in order (deterministic messages).
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
