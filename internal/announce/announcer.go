package announce

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"

	"github.com/noderotation/node-rotation-controller/actions"
)

// Announcer turns announcements into log lines, Events and metrics.
type Announcer struct {
	Log      logr.Logger
	Recorder record.EventRecorder
	seen     *dedup
	lastBeat atomic.Pointer[time.Time]
}

// New returns an announcer.
func New(log logr.Logger, rec record.EventRecorder) *Announcer {
	return &Announcer{Log: log, Recorder: rec, seen: newDedup()}
}

// endPass clears the pool's level-triggered conditions not re-asserted in
// the pass that just ended, so they re-fire when they return.
func (a *Announcer) endPass(pool string) { a.seen.endPass(pool) }

// Forget drops a deleted pool's state.
func (a *Announcer) Forget(pool string) { a.seen.forget(pool) }

// Warn emits a deduplicated Warning Event with a log line.
func (a *Announcer) warn(pool string, obj runtime.Object, reason, msg string, kv ...any) {
	a.warnKeyed(pool, reason, obj, reason, msg, kv...)
}

// warnKeyed is Warn with an explicit deduplication key, for a condition that
// can hold for several objects of one pool at once (e.g. ShortLead claims).
func (a *Announcer) warnKeyed(pool, key string, obj runtime.Object, reason, msg string, kv ...any) {
	if a.seen.enter(pool, "warn:"+key, msg) {
		a.event(obj, corev1.EventTypeWarning, reason, msg)
		a.Log.Info(msg, append([]any{"nodepool", pool, "reason", reason}, kv...)...)
	}
}

func (a *Announcer) event(obj runtime.Object, typ, reason, msg string) {
	if a.Recorder != nil && obj != nil {
		a.Recorder.Event(obj, typ, reason, msg)
	}
}

// step is one earned announcement as the handlers read it: what the pass
// observed, and what the pass's steps reported before the announce step.
type step struct {
	view   *View
	before []actions.Result
	log    logr.Logger
}

func (s step) pool() string  { return s.view.Pool.Name }
func (s step) claim() string { return s.view.SubjectName }

// last is the latest result of the named action before this step.
func (s step) last(action string) (actions.Result, bool) { return actions.Last(s.before, action) }

// Check fails when an announcement the action catalog allows has no
// handler, or a handler answers an announcement the catalog does not know:
// the controller refuses to start rather than drop an announcement.
func Check() error {
	known := map[actions.Announcement]bool{}
	for _, w := range actions.Announcements {
		known[w] = true
		if handlers[w] == nil {
			return fmt.Errorf("announcement %q has no handler", w)
		}
	}
	for w := range handlers {
		if !known[w] {
			return fmt.Errorf("handler for %q, which no step can announce", w)
		}
	}
	return nil
}
