package engine

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// APIVersion is the only table format this engine reads.
const APIVersion = "rules.noderotation.io/v1"

// Table is the decoded rules file: facts over the snapshot, and per machine
// the transitions from each state.
type Table struct {
	APIVersion string    `yaml:"apiVersion"`
	Version    int       `yaml:"version"`
	Facts      []FactDef `yaml:"facts"`
	Machines   []Machine `yaml:"machines"`
}

// FactDef is one named, typed fact: a CEL expression over the snapshot's
// inputs, or a Go observer registered under the same name.
type FactDef struct {
	Name        string   `yaml:"name"`
	Type        string   `yaml:"type"`             // bool or enum
	Values      []string `yaml:"values,omitempty"` // the enum's domain
	Description string   `yaml:"description"`
	Expr        string   `yaml:"expr,omitempty"`
	Observer    string   `yaml:"observer,omitempty"`
	// ChangesAt lists CEL expressions over the inputs, each the instant at
	// which the fact's value may change with the observation held — the
	// first instant of the new value, so a pass woken then sees it. A
	// fact whose expression reads now must declare them: they are when
	// the controller wakes (docs/design.md#requeue-instants).
	ChangesAt []string `yaml:"changesAt,omitempty"`
	line      int
}

// Machine is one state machine of the table: the fact that names its state
// and the transitions out of each state. Every pass decides one transition
// per machine.
type Machine struct {
	Name      string `yaml:"name"`
	StateFact string `yaml:"state"`
	// Scope is what one decision of the machine is about: "slot", once
	// per rotation slot of the pool, each on its own slot's snapshot
	// (docs/design.md#throughput); "pool" (the default, or empty), once
	// per pass on the pool's.
	Scope       string       `yaml:"scope,omitempty"`
	Description string       `yaml:"description"`
	Transitions []Transition `yaml:"transitions"`
	line        int
}

// Transition is one row: from which states, under which guard, to which
// state, through which ordered steps, and when to come back.
type Transition struct {
	ID      string   `yaml:"id"`
	From    []string `yaml:"from"`
	Guard   string   `yaml:"guard"`
	To      string   `yaml:"to"`
	Steps   []Step   `yaml:"steps"`
	Requeue string   `yaml:"requeue"`
	// OnLost is the requeue when an electing step reports that this pass
	// does not own the transition (default 30s).
	OnLost string `yaml:"onLost,omitempty"`
	Cite   string `yaml:"cite"`
	line   int
	// parsed
	requeue, onLost time.Duration
}

// Step is one action invocation. When Elect is true the action's outcome
// decides whether this pass owns the transition: if it did not win, the
// remaining steps are skipped.
type Step struct {
	Action string         `yaml:"action" json:"action"`
	Elect  bool           `yaml:"elect,omitempty" json:"elect,omitempty"`
	Args   map[string]any `yaml:"args,omitempty" json:"args,omitempty"`
}

// Parse decodes a table strictly: an unknown key, a missing field or an
// unknown apiVersion is an error naming its line.
func Parse(data []byte) (*Table, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	if len(root.Content) == 0 {
		return nil, errors.New("rules: empty table")
	}
	if v, line := scalarField(root.Content[0], "apiVersion"); v != APIVersion {
		return nil, fmt.Errorf("rules: line %d: apiVersion %q is not supported (want %q)", line, v, APIVersion)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var t Table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	recordLines(root.Content[0], &t)
	return &t, t.validateShape()
}

// scalarField returns a mapping's scalar value for key and its line.
func scalarField(m *yaml.Node, key string) (string, int) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1].Value, m.Content[i+1].Line
		}
	}
	return "", m.Line
}

// recordLines remembers each fact's, machine's and transition's line so
// later errors can point at it.
func recordLines(root *yaml.Node, t *Table) {
	seq := func(key string) []*yaml.Node {
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == key {
				return root.Content[i+1].Content
			}
		}
		return nil
	}
	for i, n := range seq("facts") {
		if i < len(t.Facts) {
			t.Facts[i].line = n.Line
		}
	}
	for i, n := range seq("machines") {
		if i >= len(t.Machines) {
			break
		}
		t.Machines[i].line = n.Line
		for j := 0; j+1 < len(n.Content); j += 2 {
			if n.Content[j].Value != "transitions" {
				continue
			}
			for k, tn := range n.Content[j+1].Content {
				if k < len(t.Machines[i].Transitions) {
					t.Machines[i].Transitions[k].line = tn.Line
				}
			}
		}
	}
}

// validateShape checks what the YAML decoder cannot: required fields,
// uniqueness, durations.
func (t *Table) validateShape() error {
	var errs []error
	bad := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("rules: line %d: "+format, append([]any{line}, args...)...))
	}
	if t.Version < 1 {
		bad(1, "version must be a positive integer")
	}
	facts := map[string]bool{}
	for _, f := range t.Facts {
		switch {
		case f.Name == "":
			bad(f.line, "a fact needs a name")
		case facts[f.Name]:
			bad(f.line, "fact %q is defined twice", f.Name)
		}
		facts[f.Name] = true
		if (f.Expr == "") == (f.Observer == "") {
			bad(f.line, "fact %q needs exactly one of expr or observer", f.Name)
		}
		if f.Description == "" {
			bad(f.line, "fact %q needs a one-line description", f.Name)
		}
		switch f.Type {
		case "bool":
			if len(f.Values) > 0 {
				bad(f.line, "bool fact %q takes no values", f.Name)
			}
		case "enum":
			if len(f.Values) < 2 {
				bad(f.line, "enum fact %q needs at least two values", f.Name)
			}
		default:
			bad(f.line, "fact %q has type %q; want bool or enum", f.Name, f.Type)
		}
	}
	ids := map[string]bool{}
	for mi := range t.Machines {
		m := &t.Machines[mi]
		if m.Name == "" || m.StateFact == "" {
			bad(m.line, "a machine needs a name and a state fact")
		}
		for ti := range m.Transitions {
			tr := &m.Transitions[ti]
			if tr.ID == "" || ids[tr.ID] {
				bad(tr.line, "transition id %q is empty or not unique", tr.ID)
			}
			ids[tr.ID] = true
			if len(tr.From) == 0 || tr.Guard == "" || tr.To == "" || tr.Cite == "" {
				bad(tr.line, "transition %q needs from, guard, to and cite", tr.ID)
			}
			var err error
			if tr.requeue, err = time.ParseDuration(tr.Requeue); err != nil {
				bad(tr.line, "transition %q: requeue %q is not a duration", tr.ID, tr.Requeue)
			}
			tr.onLost = 30 * time.Second
			if tr.OnLost != "" {
				if tr.onLost, err = time.ParseDuration(tr.OnLost); err != nil {
					bad(tr.line, "transition %q: onLost %q is not a duration", tr.ID, tr.OnLost)
				}
			}
		}
	}
	return errors.Join(errs...)
}
