package invariants

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// checkWorkloads replays the watch record of each workload's Pods in
// resourceVersion order — etcd's one total order, so the healthy count
// after each record is the count the API server had at that revision.
func checkWorkloads(in Input, r *Report) {
	if in.Records == nil {
		return
	}
	end := in.Now
	if end.IsZero() {
		end = time.Now()
	}
	records := in.Records.Sorted()
	for _, w := range in.Workloads {
		obj := fmt.Sprintf("Workload/%s/%s", w.Namespace, labels.SelectorFromSet(w.Selector))
		if w.MinHealthy > 0 {
			lowest, at := lowestHealthy(records, w, in.SinceRV)
			r.check(lowest >= w.MinHealthy, BelowMinHealthy, obj, "%d healthy Pods at resourceVersion %d, the PDB allows no fewer than %d", lowest, at, w.MinHealthy)
		}
		if w.MaxPending > 0 {
			longest, pod := longestPending(records, w, in.SinceRV, end)
			r.check(longest <= w.MaxPending, PendingTooLong, obj, "Pod %s pending %s, bound %s", pod, longest.Round(100*time.Millisecond), w.MaxPending)
		}
	}
}

func matches(rec recorder.Record, w Workload) bool {
	return rec.Kind == "Pod" && rec.Obj.GetNamespace() == w.Namespace && labels.SelectorFromSet(w.Selector).Matches(labels.Set(rec.Obj.GetLabels()))
}

// healthy is what the disruption controller counts: Ready and not
// terminating.
func healthy(rec recorder.Record) bool {
	p, ok := rec.Obj.(*corev1.Pod)
	if !ok || recorder.Deleted(rec) || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// lowestHealthy is the fewest healthy Pods of w at any revision from
// sinceRV on, and the revision where it was first that low.
func lowestHealthy(records []recorder.Record, w Workload, sinceRV int64) (int, int64) {
	state := map[string]bool{}
	count := func() int {
		n := 0
		for _, h := range state {
			if h {
				n++
			}
		}
		return n
	}
	lowest, at := -1, sinceRV
	for _, rec := range records {
		if rec.RV > sinceRV && lowest < 0 {
			lowest = count() // the state at sinceRV
		}
		if !matches(rec, w) {
			continue
		}
		state[rec.Obj.GetName()] = healthy(rec)
		if rec.RV > sinceRV {
			if n := count(); n < lowest {
				lowest, at = n, rec.RV
			}
		}
	}
	if lowest < 0 {
		lowest = count()
	}
	return lowest, at
}

// longestPending is the longest any Pod of w created after sinceRV waited
// to run, as the watch saw it: from its creation until it was first seen
// Running, or deleted, or until end if it never ran — so a Pod stuck
// Pending is the longest wait, never skipped.
func longestPending(records []recorder.Record, w Workload, sinceRV int64, end time.Time) (time.Duration, string) {
	created := map[string]time.Time{}
	var longest time.Duration
	var which string
	note := func(name string, d time.Duration) {
		if d > longest {
			longest, which = d, name
		}
	}
	for _, rec := range records {
		if !matches(rec, w) {
			continue
		}
		name := rec.Obj.GetName()
		if recorder.Added(rec) && rec.RV > sinceRV {
			created[name] = rec.Seen
		}
		t, waiting := created[name]
		if !waiting {
			continue
		}
		if p, ok := rec.Obj.(*corev1.Pod); recorder.Deleted(rec) || (ok && p.Status.Phase == corev1.PodRunning) {
			note(name, rec.Seen.Sub(t))
			delete(created, name)
		}
	}
	for name, t := range created {
		note(name, end.Sub(t))
	}
	return longest, which
}
