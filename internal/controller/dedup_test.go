package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/announce"
	"github.com/noderotation/node-rotation-controller/internal/census"
)

// Two malformed annotations at once are each said once, not re-said on
// every pass: each Warning is deduplicated by its object, reason and key
// (found on a real cluster: two bad values alternated and re-fired every
// pass until client-go's per-object Event budget was spent).
func TestTwoInvalidAnnotationsAreEachSaidOnce(t *testing.T) {
	rec := &recorder{FakeRecorder: record.NewFakeRecorder(50)}
	var lines []logLine
	r := &NodePoolReconciler{Announcer: announce.New(capture(t, 0, &lines), rec)}
	obs := governedObservation(t)
	obs.Findings = nil
	obs.BadAnnotations = []census.BadAnnotation{
		{Object: "NodeClaim/a", Key: v1alpha1.AnnotationFailedAt, Value: "x", Problem: "not an RFC3339 time"},
		{Object: "NodeClaim/b", Key: v1alpha1.AnnotationRetryCount, Value: "-1", Problem: "not a non-negative integer"},
	}
	for pass := 0; pass < 3; pass++ {
		say(t, r, obs)
	}
	if got := rec.drain(); len(got) != 2 {
		t.Errorf("%d Events over three passes, want 2 (one per bad value): %q", len(got), got)
	}
	// A value that changes is new: said again, once.
	obs.BadAnnotations[1].Value = "-2"
	for pass := 0; pass < 2; pass++ {
		say(t, r, obs)
	}
	if got := rec.drain(); len(got) != 1 {
		t.Errorf("after a change: %d Events, want 1: %q", len(got), got)
	}
}

// The Event spam filter budgets each reason of an object apart.
func TestSpamKeyKeepsReasonsApart(t *testing.T) {
	ev := func(reason string) *corev1.Event {
		return &corev1.Event{Type: corev1.EventTypeWarning, Reason: reason, Source: corev1.EventSource{Component: "node-rotation-controller"},
			InvolvedObject: corev1.ObjectReference{Kind: "NodePool", Name: "general", UID: "u1", APIVersion: "karpenter.sh/v1"}}
	}
	if spamKey(ev("InvalidAnnotation")) == spamKey(ev("GovernanceLost")) {
		t.Error("two reasons share one Event budget")
	}
	if spamKey(ev("InvalidAnnotation")) != spamKey(ev("InvalidAnnotation")) {
		t.Error("one reason of one object has two budgets")
	}
	other := ev("InvalidAnnotation")
	other.InvolvedObject.Name = "batch"
	if spamKey(other) == spamKey(ev("InvalidAnnotation")) {
		t.Error("two objects share one Event budget")
	}
}

// Past client-go's burst of one reason, another reason on the same object
// still gets through.
func TestBroadcasterFloodDoesNotSilenceAnotherReason(t *testing.T) {
	b := EventBroadcaster()
	defer b.Shutdown()
	got := make(chan string, 100)
	b.StartRecordingToSink(sink(got)) // the path client-go's spam filter sits on
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "node-rotation-controller"})
	pool := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "general", UID: "u1"}}
	for i := 0; i < 40; i++ {
		rec.Eventf(pool, corev1.EventTypeWarning, "InvalidAnnotation", "bad value %d", i)
	}
	rec.Event(pool, corev1.EventTypeWarning, "GovernanceLost", "rolled back")
	deadline := time.After(10 * time.Second)
	for {
		select {
		case r := <-got:
			if r == "GovernanceLost" {
				return
			}
		case <-deadline:
			t.Fatal("GovernanceLost never left the broadcaster after a flood of InvalidAnnotation")
		}
	}
}

// sink is an EventSink that reports the reason of every Event it is sent.
type sink chan string

func (s sink) Create(e *corev1.Event) (*corev1.Event, error) { s <- e.Reason; return e, nil }
func (s sink) Update(e *corev1.Event) (*corev1.Event, error) { s <- e.Reason; return e, nil }
func (s sink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) {
	s <- e.Reason
	return e, nil
}
