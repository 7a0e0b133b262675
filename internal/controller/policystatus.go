package controller

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// PolicyStatusReconciler keeps each RotationPolicy's status: the pools it
// wins, how many rotate, Ready (Accepted, Invalid, Conflict — Invalid wins)
// and Feasible: False for the fatal findings of the pools it governs, else
// for a pool whose nodes cannot all be rotated before their deadlines
// (docs/design.md#coverage-verdict). The status is observational only:
// nothing reads it back for decisions.
type PolicyStatusReconciler struct {
	Client client.Client
	Log    logr.Logger
	Clock  func() time.Time
	// PullSecretsAllowed: the controller may honour prePull.usePullSecrets;
	// without it Ready says the field is not in effect.
	PullSecretsAllowed bool
}

// Reconcile recomputes one policy's status.
func (r *PolicyStatusReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &v1alpha1.RotationPolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	policies := &v1alpha1.RotationPolicyList{}
	pools := &karpv1.NodePoolList{}
	if err := r.Client.List(ctx, policies); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing RotationPolicies: %w", err)
	}
	if err := r.Client.List(ctx, pools); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing NodePools: %w", err)
	}
	status := r.compute(p, policies.Items, pools.Items, r.claimsOf(ctx))
	if statusEqual(p.Status, status) {
		return reconcile.Result{RequeueAfter: Backstop}, nil
	}
	p.Status = status
	if err := r.Client.Status().Update(ctx, p); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return reconcile.Result{Requeue: true}, nil // silent: the next pass recomputes
		}
		return reconcile.Result{}, fmt.Errorf("updating the status of RotationPolicy %s: %w", p.Name, err)
	}
	return reconcile.Result{RequeueAfter: Backstop}, nil
}

// pullSecretsNotGranted is Ready's word on a policy whose usePullSecrets
// the controller cannot honour (docs/design.md#pre-pull).
const pullSecretsNotGranted = "prePull.usePullSecrets is not in effect: the controller runs without -prepull-use-pull-secrets (the chart's prePull.usePullSecrets), so it may not create Pods outside its namespace; images whose Pods use imagePullSecrets are skipped (needsPullSecrets)"

// claimsOf lists a pool's NodeClaims from the cache, uncopied (read only);
// a failed list reads as none (the pool then judged covered) and is
// retried at the next recompute.
func (r *PolicyStatusReconciler) claimsOf(ctx context.Context) func(pool string) []karpv1.NodeClaim {
	return func(pool string) []karpv1.NodeClaim {
		list := &karpv1.NodeClaimList{}
		if err := r.Client.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}, client.UnsafeDisableDeepCopy); err != nil {
			r.Log.Error(err, "listing NodeClaims for the coverage verdict", "nodepool", pool)
			return nil
		}
		return list.Items
	}
}

func (r *PolicyStatusReconciler) compute(p *v1alpha1.RotationPolicy, policies []v1alpha1.RotationPolicy, pools []karpv1.NodePool, claimsOf func(string) []karpv1.NodeClaim) v1alpha1.RotationPolicyStatus {
	now := r.Clock()
	st := v1alpha1.RotationPolicyStatus{ObservedGeneration: p.Generation, Conditions: append([]metav1.Condition(nil), p.Status.Conditions...)}
	settings, invalid := policy.Resolve(p.Spec)
	var conflicts, fatal, uncovered []string
	uncoveredReason := ""
	for i := range pools {
		pool := &pools[i]
		g := policy.Select(policies, pool.Labels)
		if slices.Contains(g.Conflict, p.Name) {
			conflicts = append(conflicts, fmt.Sprintf("NodePool %s ties with %s", pool.Name, strings.Join(without(g.Conflict, p.Name), ", ")))
		}
		if g.Policy == nil || g.Policy.Name != p.Name {
			continue
		}
		st.MatchedNodePools++
		if pool.Annotations[v1alpha1.AnnotationActiveRotation] != "" {
			st.RotatingNodePools++
		}
		if invalid == nil {
			if reasons := fatalReasons(settings, pool, now); len(reasons) > 0 {
				fatal = append(fatal, fmt.Sprintf("NodePool %s: %s", pool.Name, strings.Join(reasons, ", ")))
			} else if c := observe.CoverageOf(settings, pool, claimsOf(pool.Name), now); !c.Covered {
				uncovered = append(uncovered, fmt.Sprintf("NodePool %s: %s", pool.Name, c.Sentence()))
				if uncoveredReason == "" || c.Reason == "ThroughputBelowArrival" {
					uncoveredReason = c.Reason
				}
			}
		}
	}
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "valid and uncontested", ObservedGeneration: p.Generation}
	switch {
	case invalid != nil:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "Invalid", strings.ReplaceAll(invalid.Error(), "\n", "; ")
	case len(conflicts) > 0:
		sort.Strings(conflicts)
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, "Conflict", strings.Join(conflicts, "; ")+": those NodePools are not rotated"
	case p.Spec.PrePull.Enabled && p.Spec.PrePull.UsePullSecrets && !r.PullSecretsAllowed:
		ready.Message += "; " + pullSecretsNotGranted
	}
	feasible := metav1.Condition{Type: "Feasible", Status: metav1.ConditionTrue, Reason: "Covered", Message: "every governed NodePool's nodes can be rotated before their deadlines, and none has a fatal finding", ObservedGeneration: p.Generation}
	switch {
	case invalid != nil:
		feasible.Status, feasible.Reason, feasible.Message = metav1.ConditionUnknown, "Invalid", "the policy does not resolve"
	case len(fatal) > 0:
		sort.Strings(fatal)
		feasible.Status, feasible.Reason, feasible.Message = metav1.ConditionFalse, "FatalFindings", strings.Join(fatal, "; ")
	case len(uncovered) > 0:
		sort.Strings(uncovered)
		feasible.Status, feasible.Reason, feasible.Message = metav1.ConditionFalse, uncoveredReason, strings.Join(uncovered, "; ")
	}
	meta.SetStatusCondition(&st.Conditions, ready)
	meta.SetStatusCondition(&st.Conditions, feasible)
	return st
}

func fatalReasons(s policy.Settings, pool *karpv1.NodePool, now time.Time) []string {
	inputs, d := s.Derive(pool, now)
	var out []string
	for _, f := range s.Assess(inputs, d, schedule.Population{}) {
		if f.Severity == schedule.Fatal {
			out = append(out, f.Reason)
		}
	}
	return out
}

func statusEqual(a, b v1alpha1.RotationPolicyStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.MatchedNodePools != b.MatchedNodePools || a.RotatingNodePools != b.RotatingNodePools || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for _, c := range b.Conditions {
		old := meta.FindStatusCondition(a.Conditions, c.Type)
		if old == nil || old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message || old.ObservedGeneration != c.ObservedGeneration {
			return false
		}
	}
	return true
}

func without(list []string, s string) []string {
	var out []string
	for _, v := range list {
		if v != s {
			out = append(out, v)
		}
	}
	return out
}

// SetupWithManager registers the status reconciler: every policy is
// recomputed when any NodePool or RotationPolicy changes.
func (r *PolicyStatusReconciler) SetupWithManager(mgr ctrl.Manager, name string) error {
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		list := &v1alpha1.RotationPolicyList{}
		if err := r.Client.List(ctx, list); err != nil {
			return nil
		}
		out := make([]reconcile.Request, len(list.Items))
		for i, p := range list.Items {
			out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).Named(name).
		For(&v1alpha1.RotationPolicy{}).
		Watches(&karpv1.NodePool{}, all).
		Watches(&v1alpha1.RotationPolicy{}, all).
		Complete(r)
}
