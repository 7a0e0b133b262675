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
	var skip, invalid, held []string
	for _, e := range w.rec.drain() {
		switch {
		case strings.HasPrefix(e, "Normal SkipHeld "):
			held = append(held, e)
		case strings.HasPrefix(e, "Warning SkipPastDeadline "):
			skip = append(skip, e)
		case strings.HasPrefix(e, "Warning InvalidAnnotation "):
			invalid = append(invalid, e)
		}
	}
	if len(skip) != 1 || !strings.Contains(skip[0], "noderotation.io/skip-until 2026-11-30T13:00:00Z is not before its last usable start ") || !strings.Contains(skip[0], "(deadline 2026-11-30T12:20:00Z") {
		t.Errorf("SkipPastDeadline %q", skip)
	}
	if len(invalid) != 1 || !strings.Contains(invalid[0], `NodeClaim/general-b: annotation noderotation.io/rotate-next="yes" is not "true" or "false"; the request is ignored`) {
		t.Errorf("InvalidAnnotation %q", invalid)
	}
	if want := "idle.skip-held"; w.transitions()[0] != want {
		t.Errorf("decision %s, want %s: the skipped claim is due, the other not", w.transitions()[0], want)
	}
	if len(held) != 1 || !strings.Contains(held[0], "no rotation starts: noderotation.io/skip-until keeps out general-a until 2026-11-30T13:00:00Z") {
		t.Errorf("SkipHeld %q, want one naming general-a, though two passes took the row", held)
	}
}

// A start that serves an operator's rotate-next takes idle.start-requested
// and says RotationRequested on the claim, once: the next pass is the
// rotation's own and says nothing more of the request.
func TestRotateNextStartSaysRotationRequested(t *testing.T) {
	w := newWorld(t, nil, nodePool("general"), governing(),
		nodeClaim("general-a", 10*24*time.Hour, "node-a", v1alpha1.AnnotationRotateNext, "true"), node("node-a"))
	w.reconcile(t, "general")
	if want := "idle.start-requested"; w.transitions()[0] != want {
		t.Fatalf("decision %s, want %s", w.transitions()[0], want)
	}
	w.reconcile(t, "general")
	var requested []string
	for _, e := range w.rec.drain() {
		if strings.HasPrefix(e, "Normal RotationRequested ") {
			requested = append(requested, e)
		}
	}
	if len(requested) != 1 || !strings.Contains(requested[0], "rotating it first, as noderotation.io/rotate-next asks") {
		t.Errorf("RotationRequested %q, want one", requested)
	}
	if len(w.linesWith("rotation started at an operator's request")) != 1 {
		t.Error("no log line for the request")
	}
}
