// Package promql checks every PromQL expression the chart ships — the
// PrometheusRule's alerts and the Grafana dashboard's panels — with the
// Prometheus parser itself.
package promql

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
)

const chart = "../../charts/node-rotation-controller/"

// values stand in for the chart's templated values.
var values = strings.NewReplacer(
	"{{ .Values.prometheusRule.completionRange }}", "4h",
	"{{ .Values.prometheusRule.fallingBehindRange }}", "8d",
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
	if n != 8 {
		t.Errorf("%d alerts, want the 8 of §4.2", n)
	}
}

func TestDashboardExpressionsParse(t *testing.T) {
	raw, err := os.ReadFile(chart + "dashboards/node-rotation.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			if _, err := parser.NewParser(parser.Options{}).ParseExpr(values.Replace(strings.ReplaceAll(tg.Expr, "$nodepool", ".*"))); err != nil {
				t.Errorf("panel %q: %v\n%s", p.Title, err, tg.Expr)
			}
		}
	}
}
