package rotation_test

import (
	"fmt"
	"net"
	"net/http"
	"strconv"

	. "github.com/onsi/gomega"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/noderotation/node-rotation-controller/internal/table"
)

// metricsListen is the metrics endpoint of the suite's first instance: a
// free loopback port, so two runs of the suite on one machine do not
// collide.
var metricsListen = freePort()

func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("finding a free port for /metrics: %v", err))
	}
	defer l.Close()
	return l.Addr().String()
}

// scrape GETs /metrics and returns the value of the series of name whose
// labels include want: a counter's or gauge's value, a histogram's sample
// count. Absent series read as -1.
func scrape(name string, want map[string]string) func() float64 {
	return func() float64 {
		resp, err := http.Get("http://" + metricsListen + "/metrics")
		if err != nil {
			return -2
		}
		defer resp.Body.Close()
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		if err != nil {
			panic(fmt.Sprintf("parsing /metrics: %v", err))
		}
		f, ok := fams[name]
		if !ok {
			return -1
		}
		for _, m := range f.GetMetric() {
			if labelsInclude(m, want) {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount())
				}
			}
		}
		return -1
	}
}

func labelsInclude(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func series(name string, kv ...string) map[string]string {
	m := map[string]string{"nodepool": name}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// rulesVersion is the shipped table's version, as rules_info labels it.
func rulesVersion() string {
	e, err := table.Load()
	Expect(err).NotTo(HaveOccurred())
	return strconv.Itoa(e.Version())
}
