package engine

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The fingerprint moves with every behaviour change and with nothing else.
func TestFingerprint(t *testing.T) {
	b, err := load(t, base)
	if err != nil {
		t.Fatal(err)
	}
	same := []struct{ name, from, to string }{
		{"a description", `description: freeze in force`, `description: the freeze is in force`},
		{"a cite", `      - id: idle.frozen
        cite: test`, `      - id: idle.frozen
        cite: docs/design.md#manual-controls`},
		{"an expression re-wrapped", `expr: pool.freeze != "" && timestamp(pool.freeze) > now`, `expr: >-
      pool.freeze != ""
      && timestamp(pool.freeze) > now`},
		{"the version alone", `version: 3`, `version: 4`},
	}
	for _, c := range same {
		t.Run("unchanged by "+c.name, func(t *testing.T) {
			h, err := load(t, replaceOnce(t, base, c.from, c.to))
			if err != nil {
				t.Fatal(err)
			}
			if h.Fingerprint() != b.Fingerprint() {
				t.Error("the fingerprint moved")
			}
		})
	}
	moved := []struct{ name, from, to string }{
		{"a guard's fact", `guard: frozen`, `guard: frozen && deleting`},
		{"a requeue", `requeue: 0s`, `requeue: 2s`},
		{"an onLost", `requeue: 0s`, `requeue: 0s
        onLost: 10s`},
		{"a step's argument", `{action: say, args: {what: bye}}`, `{action: say, args: {what: hello}}`},
		{"a target", `        to: gone
        steps:
          - {action: write-anchor`, `        to: idle
        steps:
          - {action: write-anchor`},
		{"a fact's expression", `expr: claim.deleting`, `expr: "!claim.deleting"`},
		{"a changesAt", `changesAt: [timestamp(pool.freeze)]`, `changesAt: ['timestamp(pool.freeze) + duration("1s")']`},
		{"a transition's id", `id: idle.frozen`, `id: idle.held`},
	}
	for _, c := range moved {
		t.Run("moved by "+c.name, func(t *testing.T) {
			table := replaceOnce(t, base, c.from, c.to)
			if c.name == "a guard's fact" {
				table = replaceOnce(t, table, `guard: "!frozen"`, `guard: "!frozen || !deleting"`)
			}
			h, err := load(t, table)
			if err != nil {
				t.Fatal(err)
			}
			if h.Fingerprint() == b.Fingerprint() {
				t.Error("the fingerprint did not move")
			}
		})
	}
}

// Diff sees a requeue or onLost change alone, and the rendered diff warns
// when the head behaves differently under the base's version; a fact
// defined differently is named even when no combination moves.
func TestDiffSeesRequeueAndWarnsOnTheSameVersion(t *testing.T) {
	b, err := load(t, base)
	if err != nil {
		t.Fatal(err)
	}
	h, err := load(t, replaceOnce(t, base, `requeue: 0s`, `requeue: 0s
        onLost: 5s`))
	if err != nil {
		t.Fatal(err)
	}
	d := Diff(b, h)
	if len(d) != 1 || d[0].Facts[0] != (FactValue{Name: "frozen", Value: false}) || d[0].Base.OnLost != 30*time.Second || d[0].Head.OnLost != 5*time.Second {
		t.Fatalf("differences %+v, want the one combination of idle that takes idle.start", d)
	}
	var out bytes.Buffer
	if err := RenderDiff(&out, "base.yaml", "head.yaml", b, h, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"same version 3: bump `version` in head.yaml", "idle.start, its target, steps or requeue changed", "onLost 30s", "onLost 5s"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the rendered diff lacks %q:\n%s", want, out.String())
		}
	}
	bumped, err := load(t, replaceOnce(t, replaceOnce(t, base, `requeue: 0s`, `requeue: 0s
        onLost: 5s`), `version: 3`, `version: 4`))
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := RenderDiff(&out, "base.yaml", "head.yaml", b, bumped, Diff(b, bumped)); err != nil || strings.Contains(out.String(), "Warning") {
		t.Errorf("a bumped head is warned about (%v):\n%s", err, out.String())
	}
	h, err = load(t, replaceOnce(t, base, `expr: claim.deleting`, `expr: claim.deleting || claim.exists`))
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := RenderDiff(&out, "base.yaml", "head.yaml", b, h, Diff(b, h)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Facts defined differently (which observations take which value): `deleting`.") || !strings.Contains(out.String(), "Warning") {
		t.Errorf("the changed fact is not named, or not warned about:\n%s", out.String())
	}
	if got := DefinitionChanges(b, b); len(got) != 0 {
		t.Errorf("a table against itself: %v", got)
	}
}
