package engine

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// expandLines is Expand's output as a set of lines (headers dropped).
func expandLines(t *testing.T, e *Engine) map[string]bool {
	t.Helper()
	var b bytes.Buffer
	if err := e.Expand(&b); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, l := range strings.Split(b.String(), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		// machine state fact=v... -> id, with the facts sorted by name
		lhs, id, _ := strings.Cut(l, " -> ")
		f := strings.Fields(lhs)
		slices.Sort(f[2:])
		out[strings.Join(f, " ")+" -> "+id] = true
	}
	return out
}

func TestDiffOfATableWithItselfIsEmpty(t *testing.T) {
	e, err := load(t, base)
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(e, e); len(d) != 0 {
		t.Fatalf("differences %+v", d)
	}
}

// One guard changed, reading one more fact: Diff lists exactly the head's
// assignments whose transition differs from the base's on the same values
// (the base ignores the fact it does not read), computed here from the
// two tables' Expand output instead.
func TestDiffListsExactlyTheMovedCombinations(t *testing.T) {
	b, err := load(t, base)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.NewReplacer(`guard: frozen`, `guard: frozen && deleting`, `guard: "!frozen"`, `guard: "!frozen || !deleting"`).Replace(base)
	h, err := load(t, changed)
	if err != nil {
		t.Fatal(err)
	}
	// the base's choice per state and assignment of the facts it reads
	baseChoice := map[string]string{}
	baseFacts := map[string][]string{}
	for l := range expandLines(t, b) {
		lhs, id, _ := strings.Cut(l, " -> ")
		f := strings.Fields(lhs)
		baseChoice[lhs] = id
		for _, fv := range f[2:] {
			name, _, _ := strings.Cut(fv, "=")
			if !slices.Contains(baseFacts[f[0]+" "+f[1]], name) {
				baseFacts[f[0]+" "+f[1]] = append(baseFacts[f[0]+" "+f[1]], name)
			}
		}
	}
	var moved []string
	for l := range expandLines(t, h) {
		lhs, id, _ := strings.Cut(l, " -> ")
		f := strings.Fields(lhs)
		key := []string{f[0], f[1]}
		for _, fv := range f[2:] {
			name, _, _ := strings.Cut(fv, "=")
			if slices.Contains(baseFacts[f[0]+" "+f[1]], name) {
				key = append(key, fv)
			}
		}
		if baseChoice[strings.Join(key, " ")] != id {
			moved = append(moved, l)
		}
	}
	var got []string
	for _, x := range Diff(b, h) {
		if x.Base == nil || x.Head == nil || x.Base.Transition == x.Head.Transition {
			t.Fatalf("difference %+v: want a moved transition", x)
		}
		parts := []string{x.Machine, x.State}
		for _, f := range x.Facts {
			parts = append(parts, f.Name+"="+fmt.Sprint(f.Value))
		}
		got = append(got, strings.Join(parts, " ")+" -> "+x.Head.Transition)
	}
	slices.Sort(moved)
	slices.Sort(got)
	if len(moved) == 0 || !slices.Equal(got, moved) {
		t.Fatalf("diff\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(moved, "\n"))
	}
}

// A step changed keeps the transition but is a difference on every
// assignment that takes it; a fact only the head reads widens the space.
func TestDiffStepsAndNewFacts(t *testing.T) {
	b, err := load(t, base)
	if err != nil {
		t.Fatal(err)
	}
	h, err := load(t, strings.Replace(base, "{action: say, args: {what: hello}}", "{action: say, args: {what: bye}}", 1))
	if err != nil {
		t.Fatal(err)
	}
	d := Diff(b, h)
	if len(d) != 1 || d[0].Facts[0] != (FactValue{Name: "frozen", Value: false}) { // idle reads frozen alone: idle.start is frozen=false
		t.Fatalf("differences %d %+v, want the one assignment of idle.start", len(d), d)
	}
	for _, x := range d {
		if x.Base.Transition != "idle.start" || x.Head.Transition != "idle.start" || x.Base.Steps[1].Args["what"] != "hello" || x.Head.Steps[1].Args["what"] != "bye" {
			t.Fatalf("difference %+v", x)
		}
	}
	// the head reads deleting in idle too: the base's choice is the same on both of its values
	h2, err := load(t, strings.Replace(base, `guard: "!frozen"`, `guard: "!frozen && (deleting || !deleting)"`, 1))
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(b, h2); len(d) != 0 {
		t.Fatalf("a guard equal on every assignment differs: %+v", d)
	}
}
