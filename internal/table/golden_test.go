package table

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/golden"
)

// The golden cases live beside the table they pin, in package rules.
const (
	rulesDir = "../../rules"
	casesDir = rulesDir + "/testdata/cases"
)

// goldenDecision is a decision as the golden files show it.
type goldenDecision struct {
	Machine    string         `json:"machine"`
	Transition string         `json:"transition"`
	From       string         `json:"from"`
	To         string         `json:"to"`
	Requeue    string         `json:"requeue"`
	OnLost     string         `json:"onLost"`
	Steps      []engine.Step  `json:"steps"`
	Facts      map[string]any `json:"facts"`
	// Undecided: the machine's row depends on a fact that could not be
	// evaluated; it takes no step.
	Undecided *goldenFactError `json:"undecided,omitempty"`
}

type goldenResult struct {
	Decisions []goldenDecision `json:"decisions,omitempty"`
}

type goldenFactError struct {
	Fact   string         `json:"fact"`
	Inputs map[string]any `json:"inputs,omitempty"`
	Error  string         `json:"error"`
}

func decide(t *testing.T, e *engine.Engine, path string) (goldenResult, []string) {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s engine.Snapshot
	if err := yaml.UnmarshalStrict(raw, &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var res goldenResult
	var hit []string
	for _, d := range e.Decide(&s) {
		g := goldenDecision{
			Machine: d.Machine, Transition: d.Transition, From: d.From, To: d.To,
			Requeue: d.Requeue.String(), OnLost: d.OnLost.String(), Steps: d.Steps, Facts: factMap(d.Facts),
		}
		if fe := d.Undecided; fe != nil {
			g.Undecided = &goldenFactError{Fact: fe.Fact, Inputs: fe.Inputs, Error: fe.Err.Error()}
		} else {
			hit = append(hit, d.Transition)
		}
		res.Decisions = append(res.Decisions, g)
	}
	return res, hit
}

// TestGoldenCases decides every snapshot under testdata/cases and compares
// the decisions with the golden files; every transition id of the shipped
// table must be hit by at least one case.
func TestGoldenCases(t *testing.T) {
	e, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := filepath.Glob(casesDir + "/*.snapshot.yaml")
	if err != nil || len(snaps) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	hit := map[string][]string{}
	for _, p := range snaps {
		name := strings.TrimSuffix(filepath.Base(p), ".snapshot.yaml")
		t.Run(name, func(t *testing.T) {
			res, ids := decide(t, e, p)
			for _, id := range ids {
				hit[id] = append(hit[id], name)
			}
			out, err := yaml.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, strings.TrimSuffix(p, ".snapshot.yaml")+".golden.yaml", out)
		})
	}
	var missing []string
	for _, id := range e.TransitionIDs() {
		if len(hit[id]) == 0 {
			missing = append(missing, id)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("transitions without a golden case: %s", strings.Join(missing, ", "))
	}
}

// TestGoldenFactSpace pins the whole enumerated fact space, in the compact
// form (a block that takes one transition whatever its later facts are is
// one line).
func TestGoldenFactSpace(t *testing.T) {
	e, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := e.ExpandCompact(&b); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, rulesDir+"/testdata/fact-space.golden.txt", b.Bytes())
}

func factMap(fs []engine.FactValue) map[string]any {
	m := make(map[string]any, len(fs))
	for _, f := range fs {
		m[f.Name] = f.Value
	}
	return m
}

// The compact fact space holds exactly the full one: every combination
// Expand lists matches one compact line, which names its transition, and
// the compact lines cover no more combinations than Expand lists.
func TestCompactFactSpaceHoldsEveryCombination(t *testing.T) {
	e, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var full, compact bytes.Buffer
	if err := e.Expand(&full); err != nil {
		t.Fatal(err)
	}
	if err := e.ExpandCompact(&compact); err != nil {
		t.Fatal(err)
	}
	type line struct {
		lead  string            // machine and state
		facts map[string]string // fact → value, or * for any
		id    string
	}
	parse := func(b *bytes.Buffer) []line {
		var out []line
		for _, l := range strings.Split(b.String(), "\n") {
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			lhs, id, _ := strings.Cut(l, " -> ")
			f := strings.Fields(lhs)
			x := line{lead: f[0] + " " + f[1], facts: map[string]string{}, id: id}
			for _, kv := range f[2:] {
				k, v, _ := strings.Cut(kv, "=")
				x.facts[k] = v
			}
			out = append(out, x)
		}
		return out
	}
	fulls, compacts := parse(&full), parse(&compact)
	domains := map[string]map[string]bool{} // lead/fact → values seen
	for _, f := range fulls {
		for k, v := range f.facts {
			key := f.lead + "/" + k
			if domains[key] == nil {
				domains[key] = map[string]bool{}
			}
			domains[key][v] = true
		}
	}
	covered := 0
	for _, c := range compacts {
		n := 1
		for k, v := range c.facts {
			if v == "*" {
				n *= len(domains[c.lead+"/"+k])
			}
		}
		covered += n
	}
	if covered != len(fulls) {
		t.Fatalf("compact lines cover %d combinations, Expand lists %d", covered, len(fulls))
	}
	for _, f := range fulls {
		var hits []string
		for _, c := range compacts {
			if c.lead != f.lead {
				continue
			}
			match := true
			for k, v := range c.facts {
				match = match && (v == "*" || f.facts[k] == v)
			}
			if match {
				hits = append(hits, c.id)
			}
		}
		if len(hits) != 1 || hits[0] != f.id {
			t.Fatalf("%s %v -> %s: compact lines %v", f.lead, f.facts, f.id, hits)
		}
	}
}
