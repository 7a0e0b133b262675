package actions

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

var clearKeys = map[string]string{"startedAt": v1alpha1.AnnotationStartedAt, "surgeClaim": v1alpha1.AnnotationSurgeClaim}

// claimState writes the claim's state. With `from`, it accepts only those
// pre-states on a fresh copy (the conditional write that elects the pass
// owning a transition); it reports claimed, raced or gone, and the values
// it produced (e.g. the retry-count the failure write made).
func claimState(ctx context.Context, p *Pass, args map[string]any) (Result, error) {
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: p.Claim()}}
	to, _ := args["to"].(string)
	now := p.Now().UTC().Format(time.RFC3339)
	out, err := conditional(ctx, p, c, func() (bool, error) {
		cur := c.Annotations[v1alpha1.AnnotationState]
		if cur == "" {
			cur = "none"
		}
		if from, ok := args["from"].([]any); ok && !containsAny(from, cur) {
			return false, nil
		}
		if to == "none" {
			delAnn(c, v1alpha1.AnnotationState)
		} else {
			setAnn(c, v1alpha1.AnnotationState, to)
		}
		if args["stampStartedAtOnce"] == true && c.Annotations[v1alpha1.AnnotationStartedAt] == "" {
			setAnn(c, v1alpha1.AnnotationStartedAt, now)
		}
		if args["stampFailedAt"] == true {
			setAnn(c, v1alpha1.AnnotationFailedAt, now)
		}
		if args["incrementRetry"] == true {
			n, _ := strconv.Atoi(c.Annotations[v1alpha1.AnnotationRetryCount])
			setAnn(c, v1alpha1.AnnotationRetryCount, strconv.Itoa(max(n, 0)+1))
		}
		if keys, ok := args["clear"].([]any); ok {
			for _, k := range keys {
				delAnn(c, clearKeys[k.(string)])
			}
		}
		return true, nil
	})
	vals := map[string]string{}
	if out == Claimed {
		for _, k := range []string{v1alpha1.AnnotationState, v1alpha1.AnnotationStartedAt, v1alpha1.AnnotationFailedAt, v1alpha1.AnnotationRetryCount, v1alpha1.AnnotationSurgeClaim} {
			vals["claim:"+k] = c.Annotations[k]
		}
	}
	return Result{Outcome: out, Did: fmt.Sprintf("claim %s state → %s: %s", p.Claim(), to, out), Values: vals}, err
}

func containsAny(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// claimDelete deletes the old NodeClaim through Karpenter's voluntary path,
// with a UID precondition so a recreated claim of the same name is safe.
func claimDelete(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	c := p.Obs.Subject
	if c == nil {
		return Result{Outcome: Done, Did: "claim already gone"}, nil
	}
	if c.DeletionTimestamp != nil {
		return Result{Outcome: Done, Did: "claim already deleting"}, nil
	}
	err := p.Client.Delete(ctx, c, client.Preconditions{UID: &c.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return Result{}, fmt.Errorf("deleting NodeClaim %s: %w", c.Name, err)
	}
	return Result{Outcome: Done, Did: "deleted NodeClaim " + c.Name}, nil
}

// surgeClaimPersist records the induced surge NodeClaim on the old claim as
// soon as the placeholder's node is observable.
func surgeClaimPersist(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	hc, c := p.Obs.SurgeHostClaim, p.Obs.Subject
	if hc == nil || c == nil || c.Annotations[v1alpha1.AnnotationSurgeClaim] == hc.Name {
		return Result{Outcome: Done, Did: "surge claim unchanged"}, nil
	}
	if _, err := patchAnnotations(ctx, p.Client, c.DeepCopy(), map[string]*string{v1alpha1.AnnotationSurgeClaim: str(hc.Name)}); err != nil {
		return Result{}, err
	}
	return Result{Outcome: Done, Did: "surge claim " + hc.Name}, nil
}

// surgeClaimReap deletes the induced surge NodeClaim on rollback — from
// surge-claim, else the placeholder's node, else the pool's claim created
// after started-at with no node — but only if it was created after
// started-at and its node hosts nothing but the placeholder and DaemonSet
// Pods: a host that absorbed real workloads is never reaped.
func surgeClaimReap(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	started, err := time.Parse(time.RFC3339, p.claimAnnotation(v1alpha1.AnnotationStartedAt))
	if err != nil {
		return Result{Outcome: Done, Did: "no started-at: nothing induced"}, nil
	}
	target := p.inducedClaim(started)
	if target == nil {
		return Result{Outcome: Done, Did: "no induced surge claim"}, nil
	}
	if !surge.CreatedSince(target, started) {
		return Result{Outcome: Done, Did: "surge claim " + target.Name + " predates the attempt: kept"}, nil
	}
	if busy, err := p.hostsWorkload(ctx, target.Status.NodeName); err != nil || busy {
		return Result{Outcome: Done, Did: "surge claim " + target.Name + " hosts workloads: kept"}, err
	}
	if err := p.Client.Delete(ctx, target, client.Preconditions{UID: &target.UID}); err != nil && !apierrors.IsNotFound(err) {
		return Result{}, fmt.Errorf("reaping surge NodeClaim %s: %w", target.Name, err)
	}
	return Result{Outcome: Done, Did: "reaped surge NodeClaim " + target.Name}, nil
}

func (p *Pass) inducedClaim(started time.Time) *karpv1.NodeClaim {
	byName := func(match func(*karpv1.NodeClaim) bool) *karpv1.NodeClaim {
		for i := range p.Obs.Claims {
			if c := &p.Obs.Claims[i]; c.Name != p.Claim() && match(c) {
				return c
			}
		}
		return nil
	}
	if name := p.claimAnnotation(v1alpha1.AnnotationSurgeClaim); name != "" {
		if c := byName(func(c *karpv1.NodeClaim) bool { return c.Name == name }); c != nil {
			return c
		}
	}
	if p.Obs.SurgeHostClaim != nil {
		return p.Obs.SurgeHostClaim
	}
	return byName(func(c *karpv1.NodeClaim) bool { return c.Status.NodeName == "" && surge.CreatedSince(c, started) })
}

// hostsWorkload reports whether node runs any Pod other than the
// placeholder and DaemonSet Pods (fresh list, by field selector).
func (p *Pass) hostsWorkload(ctx context.Context, node string) (bool, error) {
	if node == "" {
		return false, nil
	}
	pods := &corev1.PodList{}
	if err := p.Fresh.List(ctx, pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return false, fmt.Errorf("listing Pods on %s: %w", node, err)
	}
	for _, pod := range pods.Items {
		if pod.Labels[v1alpha1.LabelSurgeFor] != "" && pod.Namespace == p.Namespace {
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
