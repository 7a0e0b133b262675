package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/rules"
)

// writeTable writes the shipped table with the replacements made (each
// must apply once) and returns its path.
func writeTable(t *testing.T, pairs ...string) string {
	t.Helper()
	s := string(rules.Table)
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.Count(s, pairs[i]) != 1 {
			t.Fatalf("%q appears %d times in the shipped table", pairs[i], strings.Count(s, pairs[i]))
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	p := filepath.Join(t.TempDir(), "head.yaml")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func diffJSON(t *testing.T, base, head string) []engine.Difference {
	t.Helper()
	code, out, errOut := runCLI("rules", "diff", "-o", "json", base, head)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var d []engine.Difference
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRulesDiffOfTheShippedTableWithItselfIsEmpty(t *testing.T) {
	code, out, errOut := runCLI("rules", "diff", "../../rules/rotation.yaml", "../../rules/rotation.yaml")
	if code != 0 || !strings.Contains(out, "No difference") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if d := diffJSON(t, "../../rules/rotation.yaml", "../../rules/rotation.yaml"); len(d) != 0 {
		t.Fatalf("differences %+v", d)
	}
}

// A frozen pool's stamped, unsettled window no longer holds the missed
// window back: exactly the one combination with frozen=true moves from
// settled to missed.
func TestRulesDiffOneGuardChanged(t *testing.T) {
	head := writeTable(t,
		"guard: windowStamped && !attemptInFlight && outstanding && !windowSettled && !frozen && !blackedOut\n", "guard: windowStamped && !attemptInFlight && outstanding && !windowSettled && !blackedOut\n",
		"guard: windowStamped && !attemptInFlight && !(outstanding && !windowSettled && !frozen && !blackedOut)\n", "guard: windowStamped && !attemptInFlight && !(outstanding && !windowSettled && !blackedOut)\n")
	d := diffJSON(t, "../../rules/rotation.yaml", head)
	if len(d) != 1 {
		t.Fatalf("%d differences, want 1: %+v", len(d), d)
	}
	x := d[0]
	want := map[string]any{"windowStamped": true, "attemptInFlight": false, "outstanding": true, "windowSettled": false, "frozen": true, "blackedOut": false}
	got := map[string]any{}
	for _, f := range x.Facts {
		got[f.Name] = f.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("fact %s = %v, want %v (facts %v)", k, got[k], v, got)
		}
	}
	if x.Machine != "window" || x.State != "closed" || x.Base.Transition != "window.closed.settled" || x.Head.Transition != "window.closed.missed" {
		t.Fatalf("difference %+v", x)
	}
	_, md, _ := runCLI("rules", "diff", "../../rules/rotation.yaml", head)
	if !strings.Contains(md, "#### window/closed: window.closed.settled → window.closed.missed (1)") {
		t.Fatalf("markdown:\n%s", md)
	}
}

// A step removed keeps every combination's transition but changes its
// steps: each combination that takes the row is listed, and only those.
func TestRulesDiffStepsChanged(t *testing.T) {
	head := writeTable(t, "          - {action: announce, args: {what: SurgeWaiting}}\n", "")
	d := diffJSON(t, "../../rules/rotation.yaml", head)
	e, _, err := loadRules(nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := e.Expand(&b); err != nil {
		t.Fatal(err)
	}
	taking := strings.Count(b.String(), " -> pending.await-surge\n")
	if taking == 0 || len(d) != taking {
		t.Fatalf("%d differences, want the %d combinations that take pending.await-surge", len(d), taking)
	}
	for _, x := range d {
		if x.Base.Transition != "pending.await-surge" || x.Head.Transition != "pending.await-surge" || len(x.Base.Steps) != len(x.Head.Steps)+1 {
			t.Fatalf("difference %+v", x)
		}
	}
}

func TestRulesDiffBadInput(t *testing.T) {
	if code, _, _ := runCLI("rules", "diff", "../../rules/rotation.yaml", "/nonexistent.yaml"); code != 2 {
		t.Errorf("unreadable head: exit %d, want 2", code)
	}
	if code, _, _ := runCLI("rules", "diff", "-o", "xml", "../../rules/rotation.yaml", "../../rules/rotation.yaml"); code != 2 {
		t.Errorf("-o xml: exit %d, want 2", code)
	}
	if code, _, _ := runCLI("rules", "diff", "../../rules/rotation.yaml"); code == 0 {
		t.Error("one table: exit 0")
	}
}

// --simulate runs the fleet under both tables. The shipped table against
// itself rotates alike; a table whose startGate no longer closes for the
// cooldown decides alike on every combination (the guards are the same,
// so the combination diff is empty) yet starts more rotations per window —
// which only the simulation shows.
func TestRulesDiffSimulate(t *testing.T) {
	sim := []string{"--simulate", "testdata/fleet-burst.yaml", "-f", example}
	code, out, errOut := runCLI(append([]string{"rules", "diff", "../../rules/rotation.yaml", "../../rules/rotation.yaml"}, sim...)...)
	if code != 0 || !strings.Contains(out, "Both tables rotate this fleet alike.") || strings.Contains(out, "**") {
		t.Fatalf("itself: exit %d\n%s%s", code, out, errOut)
	}
	head := writeTable(t, `      : pool.lastRotationAt != "" && now - timestamp(pool.lastRotationAt) < policy.cooldownAfter ? "cooldown"`+"\n", "")
	code, out, errOut = runCLI(append([]string{"rules", "diff", "../../rules/rotation.yaml", head}, sim...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "No difference") {
		t.Errorf("the guards are unchanged, so no combination moves:\n%s", out)
	}
	if !strings.Contains(out, "defined differently (which observations take which value): `startGate`.") || !strings.Contains(out, "but carry the same version ") || !strings.Contains(out, ": bump `version` in "+head+".") {
		t.Errorf("the changed fact and the unbumped version are not named:\n%s", out)
	}
	if strings.Contains(out, "rotate this fleet alike") || !strings.Contains(out, "**") {
		t.Errorf("without the cooldown more rotations fit a window: the simulation must differ:\n%s", out)
	}
	// docs/architecture.md shows this very run.
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := strings.ReplaceAll(strings.ReplaceAll(out, head, "head.yaml"), "../../rules/rotation.yaml", "rules/rotation.yaml")
	if !strings.Contains(string(doc), shown) {
		t.Errorf("docs/architecture.md#reviewing-a-change-to-the-rules-table no longer shows the run; today it prints:\n%s", shown)
	}
	if code, _, _ := runCLI(append([]string{"rules", "diff", "-o", "json", "../../rules/rotation.yaml", head}, sim...)...); code != exitBadInput {
		t.Errorf("-o json with --simulate: exit %d, want %d", code, exitBadInput)
	}
}
