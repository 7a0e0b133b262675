// Package promql checks every PromQL expression the chart ships — the
// PrometheusRule's alerts and the Grafana dashboard's panels — with the
// Prometheus parser itself.
package promql

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
)

const chart = "../../charts/node-rotation-controller/"

// values stand in for the chart's templated values.
var values = strings.NewReplacer(
	"{{ $.Values.prometheusRule.completionRange }}", "4h",
	"{{ $.Values.prometheusRule.fallingBehindRange }}", "8d",
	"{{ .for }}", "0s",
	"{{ .severity }}", "warning",
	"$__rate_interval", "5m",
)

var helmLine = regexp.MustCompile(`(?m)^\s*\{\{[-]?\s*(if|end|with|include)[^}]*\}\}\s*$|\{\{-? (include|with|toYaml|end)[^}]*\}\}`)

func TestAlertExpressionsParse(t *testing.T) {
	raw, err := os.ReadFile(chart + "templates/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert, Expr string
				}
			}
		}
	}
	text := helmLine.ReplaceAllString(string(raw), "")
	if err := yaml.Unmarshal([]byte(values.Replace(text)), &rule); err != nil {
		t.Fatalf("the PrometheusRule is not YAML once its values are filled in: %v", err)
	}
	n := 0
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			n++
			if _, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr); err != nil {
				t.Errorf("alert %s: %v\n%s", r.Alert, err, r.Expr)
			}
		}
	}
	if n != 9 {
		t.Errorf("%d alerts, want the 9 of docs/observability.md", n)
	}
}

func TestDashboardExpressionsParse(t *testing.T) {
	raw, err := os.ReadFile(chart + "dashboards/node-rotation.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, problem := range checkDashboard(raw) {
		t.Error(problem)
	}
}

// dashboardPanels pins what the dashboard must show: every panel by title,
// and per target, in order, the metrics its expression selects (a histogram
// target names its bucket series and the phase it selects). A dashboard that
// loses a panel, a target or a metric fails, and so does an empty one.
var dashboardPanels = map[string][][]string{
	"Rotations in progress":    {{"noderotation_in_progress"}},
	"Candidates vs in backoff": {{"noderotation_candidates"}, {"noderotation_in_backoff"}},
	"Completions by outcome":   {{"noderotation_completed_total"}},
	"Surge wait (p50, p95)": {
		{`noderotation_duration_seconds_bucket{phase="surge_wait"}`},
		{`noderotation_duration_seconds_bucket{phase="surge_wait"}`},
	},
	"Drain (p50, p95)": {
		{`noderotation_duration_seconds_bucket{phase="drain"}`},
		{`noderotation_duration_seconds_bucket{phase="drain"}`},
	},
	"Window active":   {{"noderotation_window_active"}},
	"Age threshold A": {{"noderotation_age_threshold_seconds"}},
	"Window missed, forceful fallbacks, stuck drains": {
		{"noderotation_window_missed_total"}, {"noderotation_forceful_fallback_total"}, {"noderotation_drain_stuck"},
	},
}

// checkDashboard parses every target of the dashboard JSON and compares the
// panels with dashboardPanels; every selector must filter by the $nodepool
// variable. It returns one line per problem.
func checkDashboard(raw []byte) []string {
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		return []string{fmt.Sprintf("the dashboard is not JSON: %v", err)}
	}
	var problems []string
	seen := map[string]bool{}
	for _, p := range dash.Panels {
		want, pinned := dashboardPanels[p.Title]
		if !pinned {
			problems = append(problems, fmt.Sprintf("panel %q is not pinned in dashboardPanels", p.Title))
		}
		if seen[p.Title] {
			problems = append(problems, fmt.Sprintf("panel %q appears twice", p.Title))
		}
		seen[p.Title] = true
		var got [][]string
		for _, tg := range p.Targets {
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(values.Replace(strings.ReplaceAll(tg.Expr, "$nodepool", ".*")))
			if err != nil {
				problems = append(problems, fmt.Sprintf("panel %q: %v\n%s", p.Title, err, tg.Expr))
				continue
			}
			var selects []string
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				vs, ok := n.(*parser.VectorSelector)
				if !ok {
					return nil
				}
				filtered, phase := false, ""
				for _, m := range vs.LabelMatchers {
					switch m.Name {
					case "nodepool":
						filtered = m.Type == labels.MatchRegexp && m.Value == ".*"
					case "phase":
						phase = m.Value
					}
				}
				if !filtered {
					problems = append(problems, fmt.Sprintf("panel %q: %s does not filter by nodepool=~\"$nodepool\"", p.Title, vs.Name))
				}
				if phase != "" {
					selects = append(selects, fmt.Sprintf("%s{phase=%q}", vs.Name, phase))
				} else {
					selects = append(selects, vs.Name)
				}
				return nil
			})
			got = append(got, selects)
		}
		if pinned && !reflect.DeepEqual(got, want) {
			problems = append(problems, fmt.Sprintf("panel %q selects %v, want %v", p.Title, got, want))
		}
	}
	for title := range dashboardPanels {
		if !seen[title] {
			problems = append(problems, fmt.Sprintf("panel %q is missing", title))
		}
	}
	sort.Strings(problems)
	return problems
}

// TestDashboardCheckFails shows the check is not vacuous: an empty
// dashboard, one without a panel, and one whose panel queries another metric
// or drops the $nodepool filter are each rejected.
func TestDashboardCheckFails(t *testing.T) {
	raw, err := os.ReadFile(chart + "dashboards/node-rotation.json")
	if err != nil {
		t.Fatal(err)
	}
	if problems := checkDashboard(raw); len(problems) > 0 {
		t.Fatalf("the shipped dashboard must pass first: %v", problems)
	}
	var dash map[string]any
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	panels := dash["panels"].([]any)
	mutate := func(f func(panels []any) []any) []byte {
		var d map[string]any
		_ = json.Unmarshal(raw, &d)
		d["panels"] = f(d["panels"].([]any))
		out, _ := json.Marshal(d)
		return out
	}
	for name, broken := range map[string][]byte{
		"no panels":       []byte(`{"panels": []}`),
		"no JSON":         []byte(`{`),
		"a panel dropped": mutate(func(ps []any) []any { return ps[1:] }),
		"a target dropped": mutate(func(ps []any) []any {
			p := ps[1].(map[string]any)
			p["targets"] = p["targets"].([]any)[:1]
			return ps
		}),
		"another metric": mutate(func(ps []any) []any {
			tg := ps[0].(map[string]any)["targets"].([]any)[0].(map[string]any)
			tg["expr"] = strings.Replace(tg["expr"].(string), "noderotation_in_progress", "noderotation_candidates", 1)
			return ps
		}),
		"no nodepool filter": mutate(func(ps []any) []any {
			tg := ps[0].(map[string]any)["targets"].([]any)[0].(map[string]any)
			tg["expr"] = "noderotation_in_progress"
			return ps
		}),
	} {
		if problems := checkDashboard(broken); len(problems) == 0 {
			t.Errorf("%s: the check passed a broken dashboard", name)
		} else {
			t.Logf("%s: %s", name, problems[0])
		}
	}
	if len(panels) != len(dashboardPanels) {
		t.Errorf("the dashboard has %d panels, dashboardPanels pins %d", len(panels), len(dashboardPanels))
	}
}
