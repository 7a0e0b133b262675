package actions

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/engine"
)

// The surge placeholder (docs/design.md#surge).
var (
	placeholderEnsureAction = action{
		spec: engine.ActionSpec{Name: ActionPlaceholderEnsure, Description: "create the surge placeholder Pod if it does not exist"},
		run:  placeholderEnsure,
	}
	placeholderDeleteAction = action{
		spec: engine.ActionSpec{Name: ActionPlaceholderDelete, Description: "delete the surge placeholder Pod if it exists, and the rotation's pre-pull Pods outside its namespace"},
		run:  placeholderDelete,
	}
)

// placeholderEnsure creates the placeholder the pass sized, unless one was
// observed; a create that finds it already there is done too.
func placeholderEnsure(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	if p.Targets.Placeholder != nil {
		return Result{Outcome: Done, Did: "placeholder exists"}, nil
	}
	pod := p.Targets.NewPlaceholder
	if pod == nil {
		return Result{}, fmt.Errorf("placeholder for %s: no claim or sizing observed", p.Targets.Claim)
	}
	if ok, err := p.confirmElection(ctx); !ok || err != nil {
		return unconfirmedResult("create placeholder"), err
	}
	pod = pod.DeepCopy()
	err := p.Client.Create(ctx, pod)
	switch {
	case apierrors.IsAlreadyExists(err):
		// the cache lagged a create this or another pass made: not ours to announce
		return Result{Outcome: Done, Did: "placeholder " + pod.Name + " already exists"}, nil
	case err != nil:
		return Result{}, fmt.Errorf("creating placeholder %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return Result{Outcome: Done, Changed: true, Did: "created placeholder " + pod.Name}, nil
}

// placeholderDelete deletes the placeholder immediately (grace period 0: it
// holds nothing but a reservation). The rotation's pre-pull Pods go with
// it: in its namespace they are its dependents, which the garbage
// collector removes; those elsewhere (usePullSecrets) cannot be, so they
// are deleted here after it. The placeholder goes first: a pass whose
// cache already misses such a Pod then misses the placeholder too (one
// watch of Pods, in order), and a phase without its placeholder creates
// nothing. A crash in between leaves them to the next row that deletes
// the placeholder (it deletes them whether or not the placeholder is
// still there), else to the claim's next attempt, which replaces them as
// stale, or the old claim's deletion (their owner).
func placeholderDelete(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	res, err := deletePlaceholder(ctx, p)
	if err != nil || res.Outcome != Done {
		return res, err
	}
	var elsewhere []*corev1.Pod
	for _, pod := range append(slices.Clone(p.Targets.PrePull), p.Targets.PrePullStale...) {
		if pod.Namespace != p.Targets.PlaceholderKey.Namespace {
			elsewhere = append(elsewhere, pod)
		}
	}
	if len(elsewhere) == 0 {
		return res, nil
	}
	more, err := deletePrePullPods(ctx, p, elsewhere)
	more.Did = res.Did + "; " + more.Did
	return more, err
}

// deletePlaceholder deletes the observed placeholder, if any.
func deletePlaceholder(ctx context.Context, p *Pass) (Result, error) {
	if p.Targets.Placeholder == nil {
		return Result{Outcome: Done, Did: "placeholder already gone"}, nil
	}
	if ok, err := p.confirmElection(ctx); !ok || err != nil {
		return unconfirmedResult("delete placeholder"), err
	}
	key := p.Targets.PlaceholderKey
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := p.Client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return Result{}, fmt.Errorf("deleting placeholder %s: %w", pod.Name, err)
	}
	return Result{Outcome: Done, Did: "deleted placeholder " + pod.Name}, nil
}
