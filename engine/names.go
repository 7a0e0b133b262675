package engine

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Go code that branches on the table — a machine's decision, a state, a
// fact, a fact's value, a transition — names it through one of the Uses
// functions below, in a package-level var beside the code that reads it, so the name is registered with the
// site that uses it. CheckNames then refuses a table that lacks a name,
// naming every site that used it: a rename in the rules file fails at
// startup and in a unit test, never silently matches nothing.

// NameKind is what a registered name names in the table.
type NameKind string

// The kinds of names Go code refers to.
const (
	KindMachine    NameKind = "machine"
	KindState      NameKind = "state"
	KindFact       NameKind = "fact"
	KindFactValue  NameKind = "fact value"
	KindTransition NameKind = "transition"
)

// NameUse is one Go site's use of a table name: Scope is the machine of a
// state, or the fact of a value.
type NameUse struct {
	Kind         NameKind
	Scope, Value string
	Site         string // file:line, relative to the module
}

var uses struct {
	sync.Mutex
	all []NameUse
}

// UsesMachine registers the calling site's use of a machine and returns it.
func UsesMachine(name string) string { return use(KindMachine, "", name) }

// UsesState registers the calling site's use of a state of machine.
func UsesState(machine, state string) string { return use(KindState, machine, state) }

// UsesFact registers the calling site's use of a fact.
func UsesFact(name string) string { return use(KindFact, "", name) }

// UsesFactValue registers the calling site's use of one value of an enum fact.
func UsesFactValue(fact, value string) string { return use(KindFactValue, fact, value) }

// UsesTransition registers the calling site's use of a transition id.
func UsesTransition(id string) string { return use(KindTransition, "", id) }

func use(kind NameKind, scope, value string) string {
	_, file, line, _ := runtime.Caller(2)
	uses.Lock()
	defer uses.Unlock()
	uses.all = append(uses.all, NameUse{Kind: kind, Scope: scope, Value: value, Site: fmt.Sprintf("%s:%d", relative(file), line)})
	return value
}

// moduleRoot is the directory above this package's: the module's root, in
// a build with -trimpath or without.
var moduleRoot = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}()

func relative(file string) string {
	if rel, ok := strings.CutPrefix(file, moduleRoot+"/"); ok {
		return rel
	}
	return file
}

// NameUses are the names the packages linked into this binary registered.
func NameUses() []NameUse {
	uses.Lock()
	defer uses.Unlock()
	return slices.Clone(uses.all)
}

// CheckNames returns an error naming every registered use the engine's
// table lacks, with its site, or nil when the table has them all.
func (e *Engine) CheckNames(used []NameUse) error {
	var missing []string
	for _, u := range used {
		if !e.hasName(u) {
			what := fmt.Sprintf("%s %q", u.Kind, u.Value)
			if u.Scope != "" {
				what = fmt.Sprintf("%s %q of %q", u.Kind, u.Value, u.Scope)
			}
			missing = append(missing, fmt.Sprintf("%s: %s", u.Site, what))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("rules table version %d lacks names the Go code uses (rename them there too):\n  %s", e.table.Version, strings.Join(missing, "\n  "))
}

func (e *Engine) hasName(u NameUse) bool {
	t := e.table
	fact := func(name string) *FactDef {
		for i := range t.Facts {
			if t.Facts[i].Name == name {
				return &t.Facts[i]
			}
		}
		return nil
	}
	switch u.Kind {
	case KindMachine:
		return slices.ContainsFunc(t.Machines, func(m Machine) bool { return m.Name == u.Value })
	case KindState:
		i := slices.IndexFunc(t.Machines, func(m Machine) bool { return m.Name == u.Scope })
		if i < 0 {
			return false
		}
		f := fact(t.Machines[i].StateFact)
		return f != nil && slices.Contains(f.Values, u.Value)
	case KindFact:
		return fact(u.Value) != nil
	case KindFactValue:
		f := fact(u.Scope)
		return f != nil && slices.Contains(f.Values, u.Value)
	case KindTransition:
		return slices.Contains(e.TransitionIDs(), u.Value)
	}
	return false
}
