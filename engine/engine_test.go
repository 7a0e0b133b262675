package engine

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// base is a small valid table: one machine over `state`, two bool facts.
const base = `apiVersion: rules.noderotation.io/v1
version: 3
facts:
  - name: state
    type: enum
    values: [idle, gone]
    description: dispatch
    expr: 'pool.anchor == "" ? "idle" : "gone"'
  - name: frozen
    type: bool
    description: freeze in force
    expr: pool.freeze != "" && timestamp(pool.freeze) > now
    changesAt: [timestamp(pool.freeze)]
  - name: deleting
    type: bool
    description: claim deleting
    expr: claim.deleting
machines:
  - name: rotation
    state: state
    description: test
    transitions:
      - id: idle.frozen
        cite: test
        from: [idle]
        guard: frozen
        to: idle
        steps: []
        requeue: 1m
      - id: idle.start
        cite: test
        from: [idle]
        guard: "!frozen"
        to: gone
        steps:
          - {action: write-anchor, elect: true}
          - {action: say, args: {what: hello}}
        requeue: 0s
      - id: gone.done
        cite: test
        from: [gone]
        guard: "true"
        to: idle
        steps:
          - {action: clear-anchor, elect: true}
          - {action: say, args: {what: bye}}
        requeue: 1m
`

func testCatalog() Catalog {
	return Catalog{
		"write-anchor": {Name: "write-anchor", Reports: true, Role: RoleAnchorWrite},
		"clear-anchor": {Name: "clear-anchor", Reports: true, Role: RoleAnchorEnd},
		"say":          {Name: "say", Role: RoleAnnounce, Args: map[string]ArgSpec{"what": {Kind: ArgString, Values: []string{"hello", "bye"}, Required: true}}},
		"poke":         {Name: "poke", Args: map[string]ArgSpec{"times": {Kind: ArgBool}}},
	}
}

func load(t *testing.T, table string) (*Engine, error) {
	t.Helper()
	return Load([]byte(table), Options{Catalog: testCatalog()})
}

func TestBaseTableLoads(t *testing.T) {
	e, err := load(t, base)
	if err != nil {
		t.Fatal(err)
	}
	if e.Version() != 3 {
		t.Errorf("version %d", e.Version())
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ds := e.Decide(&Snapshot{Now: now, Pool: PoolObservation{Freeze: "2026-12-01T00:00:00Z"}})
	if len(ds) != 1 || ds[0].Transition != "idle.frozen" || ds[0].Undecided != nil {
		t.Fatalf("decide frozen = %+v", ds)
	}
	ds = e.Decide(&Snapshot{Now: now, Pool: PoolObservation{Freeze: "2026-11-01T00:00:00Z"}})
	if ds[0].Transition != "idle.start" || ds[0].To != "gone" || ds[0].Requeue != 0 || len(ds[0].Steps) != 2 || !ds[0].Steps[0].Elect {
		t.Fatalf("decide thawed = %+v", ds[0])
	}
	ds = e.Decide(&Snapshot{Now: now, Pool: PoolObservation{Anchor: "claim-a"}})
	if ds[0].Transition != "gone.done" || ds[0].OnLost != 30*time.Second {
		t.Fatalf("decide anchored = %+v", ds[0])
	}
}

func TestBrokenTablesFailPrecisely(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"hole", `guard: "!frozen"`, `guard: "!frozen && !deleting"`,
			`machine rotation, state idle: no transition matches {deleting=true, frozen=false} (incomplete)`},
		{"overlap", `guard: frozen`, `guard: frozen || deleting`,
			`machine rotation, state idle: transitions "idle.frozen" (line 23), "idle.start" (line 30) all match {deleting=true, frozen=false} (not deterministic)`},
		{"dead row", `      - id: gone.done`, `      - id: idle.never
        cite: test
        from: [idle]
        guard: frozen && !frozen
        to: idle
        steps: []
        requeue: 1m
      - id: gone.done`, `transition "idle.never" (line 39) never matches any combination of facts (dead row)`},
		{"unknown action", `{action: say, args: {what: bye}}`, `{action: shout}`,
			`transition "gone.done" step 2 (shout): unknown action; known: clear-anchor, poke, say, write-anchor`},
		{"bad argument value", `{what: bye}`, `{what: ciao}`, `argument "what": "ciao" is not one of hello, bye`},
		{"unknown argument", `{what: bye}`, `{what: bye, loud: true}`, `unknown argument "loud"`},
		{"missing argument", `{action: say, args: {what: bye}}`, `{action: say}`, `missing required argument "what"`},
		{"elect on a silent action", `{action: say, args: {what: hello}}`, `{action: poke, elect: true}`, `elect is set but the action reports no outcome`},
		{"anchor written late", `          - {action: write-anchor, elect: true}
          - {action: say, args: {what: hello}}`, `          - {action: say, args: {what: hello}}
          - {action: write-anchor, elect: true}`, `must be the first step`},
		{"write after the anchor is cleared", `{action: say, args: {what: bye}}`, `{action: poke}`, `only announcements may follow clear-anchor`},
		{"non-bool guard", `guard: frozen`, `guard: state`, `transition "idle.frozen" guard: "state" evaluates to string, want bool`},
		{"guard reads an input", `guard: frozen`, `guard: claim.deleting`, `undeclared reference to 'claim'`},
		{"guard literal not in a domain", `guard: frozen`, `guard: frozen && state != "idel"`, `compares with "idel", which is not a value of any enum fact it reads`},
		{"CEL syntax error", `guard: frozen`, `guard: frozen &&`, `transition "idle.frozen" guard: ERROR`},
		{"fact of the wrong type", `expr: claim.deleting`, `expr: pool.anchor`, `fact "deleting": "pool.anchor" evaluates to string, want bool`},
		{"unknown apiVersion", `apiVersion: rules.noderotation.io/v1`, `apiVersion: rules.noderotation.io/v9`, `line 1: apiVersion "rules.noderotation.io/v9" is not supported`},
		{"unknown key", `    cite: test
        from: [gone]`, `    cite: test
        colour: blue
        from: [gone]`, `line 41: field colour not found`},
		{"unknown state", `to: idle
        steps:
          - {action: clear-anchor`, `to: limbo
        steps:
          - {action: clear-anchor`, `transition "gone.done": "limbo" is not a state of state`},
		{"unregistered observer", `expr: claim.deleting`, `observer: deletingObserver`, `fact "deleting" names observer "deletingObserver", which is not registered`},
		{"bad requeue", `requeue: 0s`, `requeue: soon`, `transition "idle.start": requeue "soon" is not a duration`},
		{"clock read with no changesAt", "    changesAt: [timestamp(pool.freeze)]\n", "", `fact "frozen" reads now but declares no changesAt`},
		{"changesAt that reads the clock", `changesAt: [timestamp(pool.freeze)]`, `changesAt: [now]`, `fact "frozen" changesAt: "now" reads now`},
		{"changesAt not an instant", `changesAt: [timestamp(pool.freeze)]`, `changesAt: [pool.freeze]`, `fact "frozen" changesAt: "pool.freeze" evaluates to string, want google.protobuf.Timestamp`},
		{"changesAt on a fact the clock does not move", `expr: claim.deleting`, `expr: claim.deleting
    changesAt: [claim.deletedAt]`, `fact "deleting" declares changesAt but does not read now`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(base, c.from) {
				t.Fatalf("test setup: %q not in the base table", c.from)
			}
			_, err := load(t, strings.Replace(base, c.from, c.to, 1))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

// A malformed input the applicable row depends on leaves its machine
// Undecided, naming the fact, key and value; no transition, no step.
func TestDecideReportsFactErrors(t *testing.T) {
	e, err := load(t, base)
	if err != nil {
		t.Fatal(err)
	}
	ds := e.Decide(&Snapshot{Now: time.Now(), Pool: PoolObservation{Freeze: "next tuesday"}})
	fe := ds[0].Undecided
	if fe == nil || fe.Fact != "frozen" || fe.Inputs["noderotation.io/freeze"] != "next tuesday" || ds[0].Transition != "" || len(ds[0].Steps) != 0 {
		t.Fatalf("decision %+v", ds[0])
	}
	if !strings.Contains(fe.Error(), `noderotation.io/freeze="next tuesday"`) {
		t.Errorf("message lacks the key and value: %v", fe)
	}
	// the state gone reads no fact: the same malformed freeze does not matter
	ds = e.Decide(&Snapshot{Now: time.Now(), Pool: PoolObservation{Anchor: "a", Freeze: "next tuesday"}})
	if ds[0].Undecided != nil || ds[0].Transition != "gone.done" {
		t.Errorf("decision %+v, want gone.done", ds[0])
	}
}

// A fact error is local: the machine whose row does not depend on the
// unknown fact decides, the one whose row does is Undecided.
func TestAFactErrorStopsOnlyTheMachineThatNeedsIt(t *testing.T) {
	table := base + `  - name: window
    state: state
    description: a second machine that reads deleting only
    transitions:
      - id: idle.stay
        cite: test
        from: [idle]
        guard: "!deleting"
        to: idle
        steps: []
        requeue: 1m
      - id: idle.deleting
        cite: test
        from: [idle]
        guard: deleting
        to: idle
        steps: []
        requeue: 1m
      - id: gone.stay
        cite: test
        from: [gone]
        guard: "true"
        to: gone
        steps: []
        requeue: 1m
`
	e, err := load(t, table)
	if err != nil {
		t.Fatal(err)
	}
	ds := e.Decide(&Snapshot{Now: time.Now(), Pool: PoolObservation{Freeze: "next tuesday"}})
	if len(ds) != 2 || ds[0].Undecided == nil || ds[0].Undecided.Fact != "frozen" || ds[1].Undecided != nil || ds[1].Transition != "idle.stay" {
		t.Fatalf("decisions %+v", ds)
	}
}

func TestDecideRejectsValueOutsideTheDomain(t *testing.T) {
	table := strings.Replace(base, `expr: 'pool.anchor == "" ? "idle" : "gone"'`, `expr: 'pool.anchor == "" ? "idle" : claim.state'`, 1)
	e, err := load(t, table)
	if err != nil {
		t.Fatal(err)
	}
	d := e.Decide(&Snapshot{Pool: PoolObservation{Anchor: "a"}, Claim: ClaimObservation{State: "limbo"}})[0]
	if fe := d.Undecided; fe == nil || fe.Fact != "state" || !strings.Contains(fe.Error(), "value limbo is not one of [idle gone]") || d.Transition != "" {
		t.Fatalf("decision %+v", d)
	}
}

// An observer's error is a fact error; a row that does not depend on the
// fact decides without it, whether or not its guard mentions it.
func TestObserverFacts(t *testing.T) {
	table := strings.Replace(base, `expr: claim.deleting`, `observer: deletingObserver`, 1)
	boom := errors.New("noderotation.io/retry-count \"-1\" is not a non-negative integer")
	var fail bool
	obs := map[string]FactFunc{"deletingObserver": func(s *Snapshot) (any, error) {
		if fail {
			return nil, boom
		}
		return s.Claim.Deleting, nil
	}}
	load := func(table string) *Engine {
		e, err := Load([]byte(table), Options{Catalog: testCatalog(), FactFuncs: obs})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	fail = true
	if d := load(table).Decide(&Snapshot{})[0]; d.Undecided != nil || d.Transition != "idle.start" {
		t.Fatalf("an observer fact no guard reads should not matter: %+v", d)
	}
	mentioned := strings.Replace(table, `guard: "!frozen"`, `guard: "!frozen && (deleting || !deleting)"`, 1)
	if d := load(mentioned).Decide(&Snapshot{})[0]; d.Undecided != nil || d.Transition != "idle.start" {
		t.Fatalf("a guard whose value does not depend on the fact should decide: %+v", d)
	}
	needed := strings.NewReplacer(`guard: frozen`, `guard: frozen || deleting`, `guard: "!frozen"`, `guard: "!frozen && !deleting"`).Replace(table)
	d := load(needed).Decide(&Snapshot{Now: time.Now()})[0]
	if fe := d.Undecided; fe == nil || fe.Fact != "deleting" || !errors.Is(fe, boom) {
		t.Fatalf("decision %+v", d)
	}
}

// inputs is the one list of the snapshot's CEL names: every leaf field of
// Snapshot, named by its JSON path, is exactly one input, and the input
// reads that field (each field filled with a value of its own).
func TestInputsAreTheSnapshotsFields(t *testing.T) {
	s := &Snapshot{}
	want := map[string]any{}
	var bools []string
	n := 0
	var fill func(v reflect.Value, prefix string)
	fill = func(v reflect.Value, prefix string) {
		for i := range v.NumField() {
			f, fv := v.Type().Field(i), v.Field(i)
			name := prefix + strings.Split(f.Tag.Get("json"), ",")[0]
			n++
			switch fv.Interface().(type) {
			case PoolObservation, PolicyObservation, ClaimObservation, SurgeObservation:
				fill(fv, name+".")
				continue
			case time.Time:
				fv.Set(reflect.ValueOf(time.Unix(int64(n), 0)))
			case Duration:
				fv.Set(reflect.ValueOf(Duration(n)))
				want[name] = time.Duration(n)
				continue
			case bool:
				bools = append(bools, name)
			case string:
				fv.SetString(fmt.Sprintf("v%d", n))
			case int:
				fv.SetInt(int64(n))
				want[name] = int64(n)
				continue
			default:
				t.Fatalf("%s: a field of type %s no input can carry", name, f.Type)
			}
			want[name] = fv.Interface()
		}
	}
	fill(reflect.ValueOf(s).Elem(), "")
	act := snapshotActivation{s}
	for name, w := range want {
		if got, ok := act.ResolveName(name); !ok || got != w {
			t.Errorf("%s: resolves to %v (%v), want the field's %v", name, got, ok, w)
		}
	}
	if len(inputs) != len(want) {
		for _, in := range inputs {
			if _, ok := want[in.name]; !ok {
				t.Errorf("input %s is no field of the snapshot", in.name)
			}
		}
	}
	if _, ok := act.ResolveName("pool.nothing"); ok {
		t.Error("an undeclared name resolved")
	}
	// each bool alone set: only its own input reads true
	for _, b := range bools {
		one := &Snapshot{}
		setBool(t, reflect.ValueOf(one).Elem(), strings.Split(b, "."))
		for _, other := range bools {
			if got, _ := (snapshotActivation{one}).ResolveName(other); got != (other == b) {
				t.Errorf("with %s alone set, %s resolves to %v", b, other, got)
			}
		}
	}
}

// setBool sets the bool field at the JSON path.
func setBool(t *testing.T, v reflect.Value, path []string) {
	t.Helper()
	for i := range v.NumField() {
		if strings.Split(v.Type().Field(i).Tag.Get("json"), ",")[0] != path[0] {
			continue
		}
		if len(path) == 1 {
			v.Field(i).SetBool(true)
		} else {
			setBool(t, v.Field(i), path[1:])
		}
		return
	}
	t.Fatalf("no field %s", path[0])
}

func TestEvaluateComputesAnyFact(t *testing.T) {
	e, err := load(t, base)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.FactNames(); strings.Join(got, ",") != "state,frozen,deleting" {
		t.Fatalf("FactNames = %v", got)
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := &Snapshot{Now: now, Pool: PoolObservation{Anchor: "a", Freeze: now.Add(time.Hour).Format(time.RFC3339)}, Claim: ClaimObservation{Deleting: true}}
	// in state gone no guard reads frozen or deleting, yet both evaluate
	for name, want := range map[string]any{"state": "gone", "frozen": true, "deleting": true} {
		if v, err := e.Evaluate(s, name); err != nil || v != want {
			t.Errorf("Evaluate(%s) = %v, %v; want %v", name, v, err, want)
		}
	}
	if _, err := e.Evaluate(s, "nope"); err == nil {
		t.Error("an unknown fact evaluated")
	}
	var fe *FactError
	if _, err := e.Evaluate(&Snapshot{Now: now, Pool: PoolObservation{Freeze: "soon"}}, "frozen"); !errors.As(err, &fe) {
		t.Errorf("a malformed input gave %v, want a FactError", err)
	}
}
