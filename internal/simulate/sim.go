package simulate

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// sim is the simulated clock and its queue of things to happen. Events run
// one at a time in time order (ties in the order they were scheduled), so
// a run is a pure function of its input and seed.
type sim struct {
	now, end time.Time
	queue    events
	seq      int
	rng      *rand.Rand
}

type event struct {
	at  time.Time
	seq int
	fn  func(context.Context) error
}

type events []event

func (e events) Len() int { return len(e) }
func (e events) Less(i, j int) bool {
	if !e[i].at.Equal(e[j].at) {
		return e[i].at.Before(e[j].at)
	}
	return e[i].seq < e[j].seq
}
func (e events) Swap(i, j int) { e[i], e[j] = e[j], e[i] }
func (e *events) Push(x any)   { *e = append(*e, x.(event)) }
func (e *events) Pop() any {
	old := *e
	x := old[len(old)-1]
	*e = old[:len(old)-1]
	return x
}

func newSim(start time.Time, span time.Duration, seed uint64) *sim {
	return &sim{now: start, end: start.Add(span), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (s *sim) clock() time.Time { return s.now }

// at schedules fn at t (never before now).
func (s *sim) at(t time.Time, fn func(context.Context) error) {
	if t.Before(s.now) {
		t = s.now
	}
	t = t.UTC()
	s.seq++
	heap.Push(&s.queue, event{at: t, seq: s.seq, fn: fn})
}

// after schedules fn d from now.
func (s *sim) after(d time.Duration, fn func(context.Context) error) { s.at(s.now.Add(d), fn) }

// draw is a duration drawn uniformly from r.
func (s *sim) draw(r Range) time.Duration {
	if r.Max <= r.Min {
		return r.Min
	}
	return r.Min + time.Duration(s.rng.Int64N(int64(r.Max-r.Min)+1))
}

// chance is true with probability p.
func (s *sim) chance(p float64) bool { return p > 0 && s.rng.Float64() < p }

// run executes events until the span ends or the queue empties.
func (s *sim) run(ctx context.Context) error {
	for s.queue.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := heap.Pop(&s.queue).(event)
		if e.at.After(s.end) {
			s.now = s.end
			return nil
		}
		s.now = e.at
		if err := e.fn(ctx); err != nil {
			return fmt.Errorf("at %s: %w", s.now.UTC().Format(time.RFC3339), err)
		}
	}
	s.now = s.end
	return nil
}

func reconcileRequest(pool string) ctrl.Request {
	var r ctrl.Request
	r.Name = pool
	return r
}
