package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// An operator's skip-until past the claim's deadline is a Warning on the
// claim, once; a malformed request is an InvalidAnnotation that says it is
// ignored, not that the claim is skipped (docs/design.md#manual-controls).
func TestOperatorRequestWarnings(t *testing.T) {
	w := newWorld(t, nil, nodePool("general"), governing(),
		nodeClaim("general-a", 20*time.Minute, "node-a", v1alpha1.AnnotationSkipUntil, stamp(now.Add(time.Hour))),
		nodeClaim("general-b", 10*24*time.Hour, "node-b", v1alpha1.AnnotationRotateNext, "yes"),
		node("node-a"), node("node-b"))
	w.reconcile(t, "general")
	w.reconcile(t, "general")
	var skip, invalid []string
	for _, e := range w.rec.drain() {
		switch {
		case strings.HasPrefix(e, "Warning SkipPastDeadline "):
			skip = append(skip, e)
		case strings.HasPrefix(e, "Warning InvalidAnnotation "):
			invalid = append(invalid, e)
		}
	}
	if len(skip) != 1 || !strings.Contains(skip[0], "noderotation.io/skip-until 2026-11-30T13:00:00Z is not before its deadline 2026-11-30T12:20:00Z") {
		t.Errorf("SkipPastDeadline %q", skip)
	}
	if len(invalid) != 1 || !strings.Contains(invalid[0], `NodeClaim/general-b: annotation noderotation.io/rotate-next="yes" is not "true" or "false"; the request is ignored`) {
		t.Errorf("InvalidAnnotation %q", invalid)
	}
	if want := "idle.no-candidate"; w.transitions()[0] != want {
		t.Errorf("decision %s, want %s: the skipped claim is out, the other not due", w.transitions()[0], want)
	}
}
