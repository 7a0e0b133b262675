package table_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/noderotation/node-rotation-controller/engine"
	// every package whose Go names the table's machines, states, facts
	// or transitions registers its sites when it is linked
	_ "github.com/noderotation/node-rotation-controller/internal/controller"
	_ "github.com/noderotation/node-rotation-controller/internal/inspect"
	"github.com/noderotation/node-rotation-controller/internal/table"
	"github.com/noderotation/node-rotation-controller/rules"
)

// The shipped table has every name the Go code uses.
func TestShippedTableHasEveryNameTheGoUses(t *testing.T) {
	if _, err := table.Load(); err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	for _, u := range engine.NameUses() {
		files[strings.Split(u.Site, ":")[0]] = true
	}
	for _, want := range []string{"internal/controller/gauges.go", "internal/inspect/status.go", "internal/inspect/render.go"} {
		if !files[want] {
			t.Errorf("no name registered from %s: %v", want, files)
		}
	}
}

// A state renamed in the rules file, and not in the Go, fails the check
// with every Go site that used it, and no other.
func TestRenamedStateNamesEverySiteThatUsedIt(t *testing.T) {
	renamed := renameState(t, string(rules.Table), "draining", "drained")
	e, err := table.LoadTable([]byte(renamed))
	if err != nil {
		t.Fatalf("the renamed copy does not load: %v", err)
	}
	assertMissing(t, e, engine.KindState, "draining")
	t.Log(e.CheckNames(engine.NameUses()))
}

// A transition renamed in the rules file names every site that branched
// on it.
func TestRenamedTransitionNamesEverySiteThatUsedIt(t *testing.T) {
	renamed := strings.ReplaceAll(string(rules.Table), "id: idle.readopt\n", "id: idle.re-adopt\n")
	e, err := table.LoadTable([]byte(renamed))
	if err != nil {
		t.Fatalf("the renamed copy does not load: %v", err)
	}
	assertMissing(t, e, engine.KindTransition, "idle.readopt")
}

// A fact value renamed in the rules file names every site that produces
// or reads it — here three, in three packages.
func TestRenamedFactValueNamesEverySiteThatUsedIt(t *testing.T) {
	renamed := strings.Replace(string(rules.Table), "values: [governed, ungoverned, conflict, invalid]", "values: [governed, ungoverned, tie, invalid]", 1)
	renamed = strings.ReplaceAll(renamed, `governance == "conflict"`, `governance == "tie"`)
	e, err := table.LoadTable([]byte(renamed))
	if err != nil {
		t.Fatalf("the renamed copy does not load: %v", err)
	}
	if n := assertMissing(t, e, engine.KindFactValue, "conflict"); n < 3 {
		t.Errorf("%d sites use governance=conflict, want the producer, the gauges and the status", n)
	}
}

// Each kind of name is checked: a name the table has passes, one it
// lacks is named with its site.
func TestCheckNamesOfEveryKind(t *testing.T) {
	e, err := table.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		use     engine.NameUse
		present bool
	}{
		{engine.NameUse{Kind: engine.KindMachine, Value: "rotation"}, true},
		{engine.NameUse{Kind: engine.KindMachine, Value: "rotations"}, false},
		{engine.NameUse{Kind: engine.KindState, Scope: "rotation", Value: "draining"}, true},
		{engine.NameUse{Kind: engine.KindState, Scope: "rotation", Value: "drained"}, false},
		{engine.NameUse{Kind: engine.KindState, Scope: "window", Value: "draining"}, false},
		{engine.NameUse{Kind: engine.KindState, Scope: "nowhere", Value: "idle"}, false},
		{engine.NameUse{Kind: engine.KindFact, Value: "drainStuck"}, true},
		{engine.NameUse{Kind: engine.KindFact, Value: "drainStalled"}, false},
		{engine.NameUse{Kind: engine.KindFactValue, Scope: "startGate", Value: "open"}, true},
		{engine.NameUse{Kind: engine.KindFactValue, Scope: "startGate", Value: "opened"}, false},
		{engine.NameUse{Kind: engine.KindFactValue, Scope: "drainStuck", Value: "open"}, false},
		{engine.NameUse{Kind: engine.KindTransition, Value: "idle.readopt"}, true},
		{engine.NameUse{Kind: engine.KindTransition, Value: "idle.adopt"}, false},
	} {
		tc.use.Site = "x.go:1"
		err := e.CheckNames([]engine.NameUse{tc.use})
		if (err == nil) != tc.present || (err != nil && !strings.Contains(err.Error(), "x.go:1: "+string(tc.use.Kind))) {
			t.Errorf("%+v: %v, want present %v", tc.use, err, tc.present)
		}
	}
}

func assertMissing(t *testing.T, e *engine.Engine, kind engine.NameKind, name string) int {
	t.Helper()
	err := e.CheckNames(engine.NameUses())
	if err == nil {
		t.Fatalf("a table without %s %q passed the check", kind, name)
	}
	sites := 0
	for _, u := range engine.NameUses() {
		used := u.Kind == kind && u.Value == name
		if used {
			sites++
		}
		if strings.Contains(err.Error(), u.Site+":") != used {
			t.Errorf("site %s (%s %q): named %v, want %v:\n%v", u.Site, u.Kind, u.Value, !used, used, err)
		}
	}
	if sites == 0 {
		t.Fatalf("no Go site uses %s %q: the test proves nothing", kind, name)
	}
	return sites
}

// renameState renames a state of the rotation machine where the table
// names it as one — the state fact's values and expression, and the
// rows' from and to — and leaves the actions' arguments (the claim's
// state annotation) as they are.
func renameState(t *testing.T, table, from, to string) string {
	t.Helper()
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^(    values: \[idle, none, pending, )` + from + `(, failed, expired, gone, invalid\])$`),
		regexp.MustCompile(`(?m)^(      : claim\.state == "" && pool\.rotationMode == "forceful-fallback" \? ")` + from + `(")$`),
		regexp.MustCompile(`(?m)^(        from: \[)` + from + `(\])$`),
		regexp.MustCompile(`(?m)^(        to: )` + from + `()$`),
	} {
		n := len(re.FindAllStringIndex(table, -1))
		if n == 0 {
			t.Fatalf("%s matches nothing in the table: the rename would be partial", re)
		}
		table = re.ReplaceAllString(table, "${1}"+to+"${2}")
	}
	if strings.Contains(table, "from: ["+from+"]") {
		t.Fatalf("the rename left %s in a row", from)
	}
	return table
}
