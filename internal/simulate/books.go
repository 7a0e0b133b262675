package simulate

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// How a node's lane ended.
const (
	EndRotated = "rotated"       // deleted by the controller's rotation (its drain began)
	EndExpired = "force-expired" // deleted by Karpenter at its expireAfter
	EndReaped  = "reaped"        // a surge claim the controller rolled back
	EndFailed  = "launch-failed" // a launch Karpenter gave up on
	EndDeleted = "deleted"       // deleted otherwise
	EndRunning = ""              // still there when the span ended
)

// Lane is one NodeClaim's life in the simulation.
type Lane struct {
	Pool, Name string
	Created    time.Time
	// Deadline is the forced expiry (zero for expireAfter Never).
	Deadline time.Time
	// Surge: Karpenter launched it for a placeholder.
	Surge bool
	// Starts are the rotation attempts' started-at times.
	Starts []time.Time
	// Deleted is when deletion began, Gone when the claim disappeared.
	Deleted, Gone time.Time
	End           string
}

// Margin is the time left before the forced expiry when the claim's
// deletion began; ok is false when it was not rotated.
func (l *Lane) Margin() (time.Duration, bool) {
	if l.End != EndRotated || l.Deadline.IsZero() {
		return 0, false
	}
	return l.Deadline.Sub(l.Deleted), true
}

// poolBooks keeps one pool's record of the run.
type poolBooks struct {
	pool   string
	lanes  map[string]*Lane
	order  []*Lane
	events map[string]int // Event reasons, counted

	passes, errors              int
	lastError                   string
	launchFailures, stuckDrains int
	forced                      int
	// findings: each finding reason the passes saw, first message kept,
	// in the order first seen: what explains a force-expiry.
	findings      []schedule.Finding
	holdSince     time.Time // a due candidate waits in an open window, gate closed
	longestHold   time.Duration
	longestHoldAt time.Time
}

func newPoolBooks(pool string) *poolBooks {
	return &poolBooks{pool: pool, lanes: map[string]*Lane{}, events: map[string]int{}}
}

func (b *poolBooks) created(c *karpv1.NodeClaim, surge bool) {
	l := &Lane{Pool: b.pool, Name: c.Name, Created: c.CreationTimestamp.Time, Surge: surge}
	if e := c.Spec.ExpireAfter.Duration; e != nil {
		l.Deadline = l.Created.Add(*e)
	}
	b.lanes[c.Name] = l
	b.order = append(b.order, l)
}

// sawClaim records a rotation start and the start of a deletion.
func (b *poolBooks) sawClaim(c *karpv1.NodeClaim) {
	l := b.lanes[c.Name]
	if l == nil {
		return
	}
	if t, ok := startedAt(c); ok {
		l.start(t)
	}
	if c.DeletionTimestamp != nil && l.Deleted.IsZero() {
		l.Deleted = c.DeletionTimestamp.Time
		switch {
		case l.End != "":
		case c.Annotations[v1alpha1.AnnotationState] == "draining" || len(l.Starts) > 0:
			l.End = EndRotated
		case l.Surge && c.Status.NodeName == "":
			l.End = EndReaped
		default:
			l.End = EndDeleted
		}
	}
}

// start records an attempt's start, once.
func (l *Lane) start(t time.Time) {
	if n := len(l.Starts); n == 0 || !l.Starts[n-1].Equal(t) {
		l.Starts = append(l.Starts, t)
	}
}

// launchFailed marks a claim whose launch Karpenter gave up on.
func (b *poolBooks) launchFailed(name string) {
	b.launchFailures++
	if l := b.lanes[name]; l != nil && l.End == "" {
		l.End = EndFailed
	}
}

func (b *poolBooks) forceExpired(name string, at time.Time) {
	b.forced++
	if l := b.lanes[name]; l != nil {
		l.End, l.Deleted = EndExpired, at
	}
}

func (b *poolBooks) gone(name string, at time.Time) {
	if l := b.lanes[name]; l != nil {
		l.Gone = at
		if l.End == "" {
			l.End = EndDeleted
		}
	}
}

// observe records the start of a surge-less rotation, which stamps no
// started-at on its claim but draining-at on the pool, and measures gate
// holds: a due candidate of a feasible pool waiting while the window is
// open and no rotation is in flight.
func (b *poolBooks) observe(obs *observe.Observation) {
	for _, f := range obs.Findings {
		if !slices.ContainsFunc(b.findings, func(g schedule.Finding) bool { return g.Reason == f.Reason }) {
			b.findings = append(b.findings, f)
		}
	}
	a := obs.Pool.Annotations
	for _, an := range v1alpha1.Anchors(a) {
		if a[an.Slot.Key(v1alpha1.AnnotationRotationMode)] != v1alpha1.RotationModeFallback {
			continue
		}
		if l := b.lanes[an.Claim]; l != nil {
			if t, err := time.Parse(time.RFC3339, a[an.Slot.Key(v1alpha1.AnnotationDrainingAt)]); err == nil {
				l.start(t)
			}
		}
	}
	// a start is held while a slot is free (docs/design.md#throughput)
	held := obs.WindowOpen && obs.Snapshot.Pool.Feasible && obs.Census.Candidate != nil && obs.FreeSlot() != nil
	switch {
	case held && b.holdSince.IsZero():
		b.holdSince = obs.Now
	case !held && !b.holdSince.IsZero():
		b.endHold(obs.Now)
	}
}

func (b *poolBooks) endHold(now time.Time) {
	if d := now.Sub(b.holdSince); d > b.longestHold {
		b.longestHold, b.longestHoldAt = d, b.holdSince
	}
	b.holdSince = time.Time{}
}

// eventBooks is the announcer's EventRecorder: it counts reasons.
type eventBooks struct {
	books *poolBooks
	now   func() time.Time
}

func (e *eventBooks) Event(_ runtime.Object, _, reason, _ string) { e.books.events[reason]++ }
func (e *eventBooks) Eventf(o runtime.Object, t, reason, f string, args ...any) {
	e.Event(o, t, reason, fmt.Sprintf(f, args...))
}
func (e *eventBooks) AnnotatedEventf(o runtime.Object, _ map[string]string, t, reason, f string, args ...any) {
	e.Eventf(o, t, reason, f, args...)
}
