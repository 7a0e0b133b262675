package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	_ "github.com/noderotation/node-rotation-controller/internal/golden"
)

func registered(t *testing.T) []string {
	reg := prometheus.NewRegistry()
	reg.MustRegister(All()...)
	for _, c := range All() {
		switch v := c.(type) {
		case *prometheus.GaugeVec:
			switch v {
			case RulesInfo:
				v.WithLabelValues("1").Set(1)
			case DrainBlocked:
				v.WithLabelValues("p", "pdb").Set(0)
			case StartGate:
				v.WithLabelValues("p", "open").Set(1)
			default:
				v.WithLabelValues("p").Set(0)
			}
		case *prometheus.CounterVec:
			if v == Completed {
				v.WithLabelValues("p", "success").Add(0)
			} else {
				v.WithLabelValues("p").Add(0)
			}
		case *prometheus.HistogramVec:
			v.WithLabelValues("p", "drain").Observe(1)
		}
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fams {
		names = append(names, f.GetName())
	}
	sort.Strings(names)
	return names
}

// The 25 metrics of docs/observability.md plus rules_info, and the docs table lists exactly them.
func TestMetricsMatchTheDocs(t *testing.T) {
	names := registered(t)
	if len(names) != 26 {
		t.Errorf("%d metrics registered, want the 25 of docs/observability.md + rules_info: %v", len(names), names)
	}
	doc, err := os.ReadFile("../../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	table := string(doc)
	table = table[strings.Index(table, "<!-- metrics-table"):strings.Index(table, "<!-- end metrics-table")]
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `(noderotation_[a-z_]+)`").FindAllStringSubmatch(table, -1) {
		documented = append(documented, m[1])
	}
	sort.Strings(documented)
	if strings.Join(names, " ") != strings.Join(documented, " ") {
		t.Errorf("registered %v\ndocumented %v", names, documented)
	}
}

var metricName = regexp.MustCompile(`noderotation_[a-z_]+`)

// referenced returns every noderotation_ metric an expression names, with
// the histogram suffixes folded onto their metric.
func referenced(expr string) []string {
	var out []string
	for _, m := range metricName.FindAllString(expr, -1) {
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if strings.HasSuffix(m, "_seconds"+suf) {
				m = strings.TrimSuffix(m, suf)
			}
		}
		out = append(out, m)
	}
	return out
}

// The chart's alerts and dashboard reference only metrics that exist.
func TestChartReferencesOnlyExistingMetrics(t *testing.T) {
	exists := map[string]bool{}
	for _, n := range registered(t) {
		exists[n] = true
	}
	rule, err := os.ReadFile("../../charts/node-rotation-controller/templates/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct{ Targets []struct{ Expr string } }
	}
	raw, err := os.ReadFile("../../charts/node-rotation-controller/dashboards/node-rotation.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	exprs := []string{string(rule)}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	seen := 0
	for _, e := range exprs {
		for _, m := range referenced(e) {
			seen++
			if !exists[m] {
				t.Errorf("the chart references %s, which is not a metric", m)
			}
		}
	}
	if seen < 20 {
		t.Errorf("only %d metric references found: the extraction is broken", seen)
	}
}
