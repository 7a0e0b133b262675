package invariants

import (
	"slices"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/recorder"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// What the watch record says of the pools' rotations: the counts a run's
// checks are judged against.

// Anchored are the claims the pools anchored after sinceRV, as the watch
// saw the NodePools, in order of their first anchor.
func Anchored(rec *recorder.Recorder, pools []string, sinceRV int64) []string {
	if rec == nil {
		return nil
	}
	var out []string
	for _, r := range rec.Sorted() {
		if r.Kind != "NodePool" || r.RV <= sinceRV || !slices.Contains(pools, r.Obj.GetName()) {
			continue
		}
		for _, a := range v1alpha1.Anchors(r.Obj.GetAnnotations()) {
			if !slices.Contains(out, a.Claim) {
				out = append(out, a.Claim)
			}
		}
	}
	return out
}

// Attempts counts the rotation attempts the watch saw after sinceRV: every
// attempt stamps its claim's started-at once, so each distinct (claim,
// started-at) of the pools' claims is one attempt.
func Attempts(rec *recorder.Recorder, pools []string, sinceRV int64) int {
	seen := map[string]bool{}
	eachStart(rec, pools, sinceRV, func(claim, at string) { seen[claim+"@"+at] = true })
	return len(seen)
}

// Started are the pools' claims the watch saw with a started-at after
// sinceRV, in order of first sight: the rotations that got past their
// anchor. An anchor whose claim never got that far may be released
// unstarted — a failed claim anchored for its retry, say, when the pool
// turned infeasible (failed.release) — and owes no rotation.
func Started(rec *recorder.Recorder, pools []string, sinceRV int64) []string {
	var out []string
	eachStart(rec, pools, sinceRV, func(claim, _ string) {
		if !slices.Contains(out, claim) {
			out = append(out, claim)
		}
	})
	return out
}

// eachStart calls f with every started-at the pools' claims carry in the
// records after sinceRV.
func eachStart(rec *recorder.Recorder, pools []string, sinceRV int64, f func(claim, at string)) {
	if rec == nil {
		return
	}
	for _, r := range rec.Sorted() {
		if r.Kind != "NodeClaim" || r.RV <= sinceRV || !slices.Contains(pools, r.Obj.GetLabels()[karpv1.NodePoolLabelKey]) {
			continue
		}
		if s := r.Obj.GetAnnotations()[v1alpha1.AnnotationStartedAt]; s != "" {
			f(r.Obj.GetName(), s)
		}
	}
}

// Created counts the NodeClaims of the pools created after sinceRV.
func Created(rec *recorder.Recorder, pools []string, sinceRV int64) int {
	n := 0
	for _, r := range rec.Sorted() {
		if r.Kind == "NodeClaim" && recorder.Added(r) && r.RV > sinceRV && slices.Contains(pools, r.Obj.GetLabels()[karpv1.NodePoolLabelKey]) {
			n++
		}
	}
	return n
}

// attemptFailure are the reasons of a rolled-back attempt's failure line
// (docs/design.md#fail-fast); the startup sweep and a stranded repair log
// theirs with a nodeclaim instead.
var attemptFailure = map[string]bool{"Timeout": true, "Unschedulable": true, "LaunchFailed": true}
