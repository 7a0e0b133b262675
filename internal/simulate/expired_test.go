package simulate

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// The summary names a pool's force-expired claims, 20 at most and then a
// count, with the findings the passes saw; a pool with none says nothing.
func TestSummaryNamesTheForceExpiredClaims(t *testing.T) {
	p := &PoolResult{Summary: PoolSummary{Pool: "api", ForceExpired: 25,
		Findings: []schedule.Finding{{Reason: "ThroughputBelowArrival", Severity: schedule.Warning, Message: "C is short", Remedy: "add occurrences"}}}}
	for i := range 26 {
		end := EndExpired
		if i == 25 {
			end = EndRotated
		}
		p.Lanes = append(p.Lanes, &Lane{Name: fmt.Sprintf("api-%02d", i), End: end, Deadline: time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)})
	}
	var out bytes.Buffer
	forceExpired(&out, p)
	s := out.String()
	for _, want := range []string{"api: 25 force-expired by Karpenter: api-00 (forced expiry 2026-12-08T00:00:00Z), ", "api-19 (forced expiry", ", and 5 more\n",
		"  Warning ThroughputBelowArrival: C is short; add occurrences\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "api-20") || strings.Contains(s, "api-25") {
		t.Errorf("more than 20 named, or a rotated one:\n%s", s)
	}
	out.Reset()
	p.Summary.ForceExpired = 0
	if forceExpired(&out, p); out.Len() != 0 {
		t.Errorf("a pool with none: %q", out.String())
	}
}
