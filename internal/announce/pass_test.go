package announce

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/budget"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

func (h harness) pass(t *testing.T, r Report) {
	t.Helper()
	if err := h.a.Pass(r); err != nil {
		t.Fatal(err)
	}
}

func (h harness) reasons() []string {
	var out []string
	for _, e := range h.rec.events {
		out = append(out, e.reason)
	}
	return out
}

// What a step earned is said when the step has run; once the pass has
// acted, the Warnings of what it observed and the fact it could not decide
// on, in that order; read errors are logged.
func TestPassSaysEverythingInOrder(t *testing.T) {
	h := newHarness(t)
	v := observation(t)
	v.Governed = true
	v.Findings = []schedule.Finding{{Reason: "TGPUnset", Severity: schedule.Warning, Message: "unset", Remedy: "set it"}}
	v.ReadErrors = []error{errors.New("listing Events: timeout")}
	if err := h.a.Earned(v, []actions.Earned{{What: actions.RotationStarted}}); err != nil {
		t.Fatal(err)
	}
	h.pass(t, Report{View: v, Undecided: []engine.Decision{{Machine: "window", Undecided: &engine.FactError{Fact: "windowSettled",
		Inputs: map[string]any{"noderotation.io/last-rotation-at": "soon", "policy.cooldownAfter": time.Minute}, Objects: map[string]string{"noderotation.io/last-rotation-at": "NodePool"},
		Err: errors.New("type conversion error")}}}})
	if want := []string{"RotationStarted", "TGPUnset", "InvalidAnnotation"}; !reflect.DeepEqual(h.reasons(), want) {
		t.Fatalf("Events %v, want %v", h.reasons(), want)
	}
	if msg := h.rec.events[2].message; msg != `the window machine cannot decide: fact windowSettled reading NodePool/`+v.Pool.Name+` noderotation.io/last-rotation-at="soon": type conversion error; it takes no step until the value is fixed` {
		t.Errorf("undecidable: %q", msg)
	}
	read := 0
	for _, l := range *h.lines {
		if l.msg == "a read failed; the pass goes on without it" && l.kv["error"] == "listing Events: timeout" {
			read++
		}
	}
	if read != 1 {
		t.Errorf("read error logged %d times: %+v", read, *h.lines)
	}
	// findings are said only for a governed pool
	h = newHarness(t)
	v.Governed = false
	h.pass(t, Report{View: v})
	if len(h.rec.events) != 0 {
		t.Errorf("an ungoverned pool's findings were said: %v", h.reasons())
	}
}

// A pass ends its round: a condition it did not re-assert clears, and is
// said again when it returns.
func TestPassEndsTheRound(t *testing.T) {
	h := newHarness(t)
	v := observation(t)
	v.BadAnnotations = []census.BadAnnotation{{Object: "NodeClaim/x", Key: v1alpha1.AnnotationFailedAt, Value: "x", Problem: "not an RFC3339 time"}}
	h.pass(t, Report{View: v})
	h.pass(t, Report{View: v})
	if len(h.rec.events) != 1 {
		t.Fatalf("%d Events over two passes with the same bad value, want 1", len(h.rec.events))
	}
	bad := v.BadAnnotations
	v.BadAnnotations = nil
	h.pass(t, Report{View: v}) // cleared
	v.BadAnnotations = bad
	h.pass(t, Report{View: v})
	if len(h.rec.events) != 2 {
		t.Fatalf("%d Events, want the value said again after a pass without it", len(h.rec.events))
	}
}

// A bad-state pass says its Warning on the pool it read, once, and ends no
// round: the conditions of the last pass that observed stay.
func TestPassOfABadState(t *testing.T) {
	h := newHarness(t)
	v := observation(t)
	v.BadAnnotations = []census.BadAnnotation{{Object: "NodeClaim/x", Key: v1alpha1.AnnotationFailedAt, Value: "x", Problem: "not an RFC3339 time"}}
	h.pass(t, Report{View: v})
	bad := Report{BadState: &BadState{Pool: v.Pool, BadAnnotation: census.BadAnnotation{
		Object: "NodePool/general", Key: v1alpha1.AnnotationActiveRotation, Value: "other-a", Problem: `names a NodeClaim of NodePool "other"`}}}
	h.pass(t, bad)
	h.pass(t, bad)
	h.pass(t, Report{View: v})
	want := []string{"InvalidAnnotation", "InvalidAnnotation"}
	if !reflect.DeepEqual(h.reasons(), want) {
		t.Fatalf("Events %v, want the bad value once and the bad state once", h.reasons())
	}
	if msg := h.rec.events[1].message; msg != `NodePool/general: annotation noderotation.io/active-rotation="other-a" names a NodeClaim of NodePool "other"; no step is taken` {
		t.Errorf("bad state: %q", msg)
	}
	if p, ok := h.rec.events[1].obj.(*karpv1.NodePool); !ok || p.Name != "general" {
		t.Errorf("bad state said on %T", h.rec.events[1].obj)
	}
	// a pool that is gone has nothing to say it on
	h = newHarness(t)
	bad.BadState.Pool = nil
	h.pass(t, bad)
	if len(h.rec.events)+len(*h.lines) != 0 {
		t.Errorf("said %v %v for a pool that is gone", h.reasons(), *h.lines)
	}
	if err := h.a.Pass(Report{}); err == nil {
		t.Error("a report with neither a view nor a bad state was accepted")
	}
}

// The V(1) trace: the heartbeat, a line per decision with what its steps
// did, and the stop on a stale cache.
func TestPassTrace(t *testing.T) {
	h := newHarnessV(t, 1)
	v := observation(t)
	stale := errors.Join(errors.New("transition idle.start step 1 (anchor-write)"), actions.ErrStale)
	h.pass(t, Report{View: v, Decided: []Decided{
		{Decision: engine.Decision{Machine: "window", Transition: "window.open.stamped"}, Owned: true},
		{Decision: engine.Decision{Machine: "rotation", Transition: "idle.start"}, Results: []actions.Result{{Did: "anchor general-a: stale"}}, Err: stale},
	}})
	var msgs []string
	for _, l := range *h.lines {
		msgs = append(msgs, l.msg)
	}
	if want := []string{"heartbeat", "pass", "pass", "pass stopped on a stale cache"}; !reflect.DeepEqual(msgs, want) {
		t.Fatalf("lines %q, want %q", msgs, want)
	}
	if got := (*h.lines)[2].kv["did"]; !reflect.DeepEqual(got, []any{"anchor general-a: stale"}) {
		t.Errorf("did %v", got)
	}
	quiet := newHarness(t)
	quiet.pass(t, Report{View: v, Decided: []Decided{{Decision: engine.Decision{Transition: "t"}}}})
	if len(*quiet.lines) != 0 {
		t.Errorf("traced at V(0): %+v", *quiet.lines)
	}
}

// The heartbeat is logged at V(1), at most once a minute.
func TestHeartbeat(t *testing.T) {
	h := newHarnessV(t, 1)
	h.a.heartbeat(11)
	h.a.heartbeat(11)
	if len(*h.lines) != 1 || (*h.lines)[0].msg != "heartbeat" || (*h.lines)[0].kv["rulesVersion"] != 11.0 || (*h.lines)[0].kv["level"] != 1.0 {
		t.Fatalf("lines %+v", *h.lines)
	}
	past := time.Now().Add(-61 * time.Second)
	h.a.lastBeat.Store(&past)
	h.a.heartbeat(11)
	if len(*h.lines) != 2 {
		t.Errorf("a minute later: %d heartbeats, want 2", len(*h.lines))
	}
	quiet := newHarness(t)
	quiet.a.heartbeat(11)
	if len(*quiet.lines) != 0 || quiet.a.lastBeat.Load() != nil {
		t.Errorf("heartbeat at V(0): %+v", *quiet.lines)
	}
}

// A budget Karpenter cannot read is an InvalidBudget Warning on the pool,
// naming the budget, once while it lasts.
func TestPassWarnsOfAnUnreadableBudget(t *testing.T) {
	h := newHarness(t)
	v := observation(t)
	bad := "not a schedule"
	np := &karpv1.NodePool{}
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "1", Schedule: &bad, Duration: &metav1.Duration{Duration: time.Hour}}}
	v.Budget = budget.Of(np, 4, v.Now)
	h.pass(t, Report{View: v})
	h.pass(t, Report{View: v})
	if !reflect.DeepEqual(h.reasons(), []string{"InvalidBudget"}) {
		t.Fatalf("Events %v, want one InvalidBudget", h.reasons())
	}
	if msg := h.rec.events[0].message; !strings.Contains(msg, "NodePool/general: spec.disruption.budgets[0]") || !strings.Contains(msg, "counted as allowing no disruption") {
		t.Errorf("message %q", msg)
	}
}
