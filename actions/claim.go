package actions

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/conditional"
)

// ClaimStates are the values of the noderotation.io/state annotation
// (docs/design.md#state-model); "none" is its absence.
var ClaimStates = []string{"none", "pending", "draining", "failed", "expired"}

// The writes on the old NodeClaim and the induced surge NodeClaim.
var (
	claimStateAction = action{
		spec: engine.ActionSpec{Name: ActionClaimState, Reports: true,
			Description: "write the old NodeClaim's noderotation.io/state (to none removes it), accepting only the listed pre-states (from absent: unconditional) and, with notDeleting, only a claim whose delete was not issued; with failureReason, records why the attempt failed (timeout: Timeout; unservable: the Unschedulable or LaunchFailed Karpenter said) and drops an operator's rotate-next, as the attempt it asked for has ended; reports claimed, raced or gone",
			Args: map[string]engine.ArgSpec{
				"from": list(ClaimStates...), "to": required(str(ClaimStates...)),
				"stampStartedAtOnce": flag, "stampFailedAt": flag, "incrementRetry": flag,
				"clear": list("startedAt", "surgeClaim"), "notDeleting": flag,
				"failureReason": str("timeout", "unservable"),
			}},
		run: claimState,
	}
	claimDeleteAction = action{
		spec: engine.ActionSpec{Name: ActionClaimDelete, Description: "delete the old NodeClaim (Karpenter's voluntary path; PDBs apply)"},
		run:  claimDelete,
	}
	surgeClaimPersistAction = action{
		spec: engine.ActionSpec{Name: ActionSurgeClaimPersist, Description: "record the induced surge NodeClaim on the old claim once the placeholder's node is observable"},
		run:  surgeClaimPersist,
	}
	surgeClaimReapAction = action{
		spec: engine.ActionSpec{Name: ActionSurgeClaimReap, Description: "delete the induced surge NodeClaim, only if created after started-at and its node hosts nothing but the placeholder and DaemonSet Pods"},
		run:  surgeClaimReap,
	}
)

var clearKeys = map[string]string{"startedAt": v1alpha1.AnnotationStartedAt, "surgeClaim": v1alpha1.AnnotationSurgeClaim}

// claimState writes the claim's state. With `from`, it accepts only those
// pre-states on the pass's copy (the conditional write that elects the pass
// owning a transition); it reports claimed, raced or gone, and the values
// it produced (e.g. the retry-count the failure write made).
func claimState(ctx context.Context, p *Pass, args map[string]any) (Result, error) {
	c := p.claim(p.Targets.Claim)
	to, _ := args["to"].(string)
	now := p.stamp()
	out, err := p.write(ctx, c, func() (bool, error) {
		cur := c.Annotations[v1alpha1.AnnotationState]
		if cur == "" {
			cur = "none"
		}
		if from, ok := args["from"].([]any); ok && !slices.Contains(from, any(cur)) {
			return false, nil
		}
		if args["notDeleting"] == true && c.DeletionTimestamp != nil {
			return false, nil // its delete was issued: nothing can be rolled back
		}
		if to == "none" {
			conditional.DeleteAnnotations(c, v1alpha1.AnnotationState)
		} else {
			conditional.SetAnnotation(c, v1alpha1.AnnotationState, to)
		}
		if args["stampStartedAtOnce"] == true && c.Annotations[v1alpha1.AnnotationStartedAt] == "" {
			conditional.SetAnnotation(c, v1alpha1.AnnotationStartedAt, now)
		}
		if args["stampFailedAt"] == true {
			conditional.SetAnnotation(c, v1alpha1.AnnotationFailedAt, now)
		}
		if r := failureReason(p, args); r != "" {
			conditional.SetAnnotation(c, v1alpha1.AnnotationFailureReason, r)
			// the attempt an operator's rotate-next asked for has ended
			// (docs/design.md#manual-controls)
			conditional.DeleteAnnotations(c, v1alpha1.AnnotationRotateNext)
		}
		if args["incrementRetry"] == true {
			conditional.SetAnnotation(c, v1alpha1.AnnotationRetryCount, v1alpha1.NextRetryCount(c.Annotations[v1alpha1.AnnotationRetryCount]))
		}
		if keys, ok := args["clear"].([]any); ok {
			for _, k := range keys {
				conditional.DeleteAnnotations(c, clearKeys[k.(string)])
			}
		}
		return true, nil
	})
	res := Result{Outcome: out, Did: fmt.Sprintf("claim %s state → %s: %s", p.Targets.Claim, to, out)}
	if out == Claimed && args["stampFailedAt"] == true {
		a := c.Annotations
		res.Failure = &Failure{Reason: a[v1alpha1.AnnotationFailureReason], FailedAt: a[v1alpha1.AnnotationFailedAt], RetryCount: a[v1alpha1.AnnotationRetryCount]}
	}
	return res, err
}

// failureReason is the reason a failure write records: Timeout for the
// ready-timeout rollback, Karpenter's word for a fail-fast
// (docs/design.md#fail-fast).
func failureReason(p *Pass, args map[string]any) string {
	switch args["failureReason"] {
	case "timeout":
		return v1alpha1.FailureTimeout
	case "unservable":
		if p.Targets.UnservableReason != "" {
			return p.Targets.UnservableReason
		}
		return v1alpha1.FailureTimeout
	}
	return ""
}

// claimDelete deletes the old NodeClaim through Karpenter's voluntary path,
// with a UID precondition so a recreated claim of the same name is safe,
// and the resourceVersion of the pass's newest copy as a precondition, so a
// cache that has not yet seen an earlier delete never issues (and
// announces) a second one: a conflict stops the pass as stale, and the next
// pass decides on a cache that shows the delete.
func claimDelete(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	c := p.claim(p.Targets.Claim)
	switch {
	case c.ResourceVersion == "":
		return Result{Outcome: Done, Did: "claim already gone"}, nil
	case c.DeletionTimestamp != nil:
		return Result{Outcome: Done, Did: "claim already deleting"}, nil
	case p.stale:
		return Result{Outcome: Stale, Did: "delete NodeClaim " + c.Name + ": stale"}, nil
	}
	if ok, err := p.confirmElection(ctx); !ok || err != nil {
		return unconfirmedResult("delete NodeClaim"), err
	}
	uid, rv := c.UID, c.ResourceVersion
	err := p.Client.Delete(ctx, c, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	switch {
	case err == nil:
		return Result{Outcome: Done, Changed: true, Did: "deleted NodeClaim " + c.Name}, nil
	case apierrors.IsNotFound(err):
		return Result{Outcome: Done, Did: "claim already gone"}, nil
	case apierrors.IsConflict(err):
		p.stale = true
		return Result{Outcome: Stale, Did: "delete NodeClaim " + c.Name + ": stale"}, nil
	}
	return Result{}, fmt.Errorf("deleting NodeClaim %s: %w", c.Name, err)
}

// surgeClaimPersist records the surge host's NodeClaim on the old claim as
// soon as the placeholder's node is observable: a write locked on the
// pass's copy of the claim, so a claim rolled back meanwhile is not marked.
func surgeClaimPersist(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	hc, c := p.Targets.SurgeHostClaim, p.claim(p.Targets.Claim)
	if hc == nil || c.ResourceVersion == "" || c.Annotations[v1alpha1.AnnotationSurgeClaim] == hc.Name {
		return Result{Outcome: Done, Did: "surge claim unchanged"}, nil
	}
	out, err := p.write(ctx, c, func() (bool, error) {
		conditional.SetAnnotation(c, v1alpha1.AnnotationSurgeClaim, hc.Name)
		return true, nil
	})
	if out == Stale || out == Gone {
		return Result{Outcome: out, Did: "surge claim " + hc.Name + ": " + string(out)}, err
	}
	return Result{Outcome: Done, Did: "surge claim " + hc.Name}, err
}

// surgeClaimReap deletes the surge NodeClaim the attempt induced on
// rollback, but only if its node hosts nothing but the placeholder and
// DaemonSet Pods: a host that absorbed real workloads is never reaped.
func surgeClaimReap(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	target := p.Targets.InducedClaim
	if target == nil {
		return Result{Outcome: Done, Did: "no induced surge claim"}, nil
	}
	if ok, err := p.confirmElection(ctx); !ok || err != nil {
		return unconfirmedResult("reap surge NodeClaim"), err
	}
	if busy, err := p.hostsWorkload(ctx, target.Status.NodeName); err != nil || busy {
		return Result{Outcome: Done, Did: "surge claim " + target.Name + " hosts workloads: kept"}, err
	}
	if err := p.Client.Delete(ctx, target, client.Preconditions{UID: &target.UID}); err != nil && !apierrors.IsNotFound(err) {
		return Result{}, fmt.Errorf("reaping surge NodeClaim %s: %w", target.Name, err)
	}
	return Result{Outcome: Done, Did: "reaped surge NodeClaim " + target.Name}, nil
}

// hostsWorkload reports whether node runs any Pod other than our
// placeholders and DaemonSet Pods (a fresh list, by field selector).
func (p *Pass) hostsWorkload(ctx context.Context, node string) (bool, error) {
	if node == "" {
		return false, nil
	}
	pods := &corev1.PodList{}
	if err := p.Fresh.List(ctx, pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return false, fmt.Errorf("listing Pods on %s: %w", node, err)
	}
	for _, pod := range pods.Items {
		if pod.Labels[v1alpha1.LabelSurgeFor] != "" && pod.Namespace == p.Targets.PlaceholderKey.Namespace {
			continue
		}
		if isDaemonSetPod(&pod) || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		return true, nil
	}
	return false, nil
}

func isDaemonSetPod(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}
