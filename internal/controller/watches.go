package controller

import (
	"context"
	"maps"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// SetupWithManager registers the reconciler keyed on NodePool, watching
// NodeClaims (→ their pool), placeholder Pods (→ their pool), the pool's
// Nodes on changes that matter, and RotationPolicies (→ every pool).
func (r *NodePoolReconciler) SetupWithManager(mgr ctrl.Manager, name string, workers int) error {
	byLabel := func(key string) handler.EventHandler {
		return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if pool := o.GetLabels()[key]; pool != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: pool}}}
			}
			return nil
		})
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&karpv1.NodePool{}).
		Watches(&karpv1.NodeClaim{}, byLabel(karpv1.NodePoolLabelKey), builder.WithPredicates(claimChangeMatters())).
		Watches(&corev1.Pod{}, byLabel(v1alpha1.LabelNodePool)).
		Watches(&corev1.Node{}, byLabel(karpv1.NodePoolLabelKey), builder.WithPredicates(nodeChangeMatters())).
		Watches(&v1alpha1.RotationPolicy{}, handler.EnqueueRequestsFromMapFunc(r.allPools)).
		Complete(r)
}

// allPools re-enqueues every NodePool: one policy change can alter which
// policy wins any pool (docs/design.md#governance).
func (r *NodePoolReconciler) allPools(ctx context.Context, _ client.Object) []reconcile.Request {
	pools := &karpv1.NodePoolList{}
	if err := r.Client.List(ctx, pools); err != nil {
		r.Log.Error(err, "listing NodePools to re-resolve after a RotationPolicy change")
		return nil
	}
	out := make([]reconcile.Request, len(pools.Items))
	for i, p := range pools.Items {
		out[i] = reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}}
	}
	return out
}

// nodeChangeMatters passes node creation/deletion and updates of labels,
// annotations, cordon or the Ready condition — not heartbeats.
func nodeChangeMatters() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
			return !maps.Equal(o.Labels, n.Labels) ||
				!maps.Equal(o.Annotations, n.Annotations) ||
				o.Spec.Unschedulable != n.Spec.Unschedulable || readyOf(o) != readyOf(n)
		},
	}
}

// claimChangeMatters passes NodeClaim creation/deletion and updates of
// what a fact reads — metadata, spec, node name, resources, Ready, a
// launch failure — not Karpenter's status churn (its other conditions,
// lastPodEventTime), which at fleet scale is most of the update events
// and moves no decision.
func claimChangeMatters() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*karpv1.NodeClaim), e.ObjectNew.(*karpv1.NodeClaim)
			// Typed comparisons first, and reflect.DeepEqual rather than
			// equality.Semantic for the spec and allocatable: this runs on
			// every NodeClaim update of the fleet, and two decodes of the
			// same JSON are equal either way; where the two could differ
			// (a quantity written another way), the cost is one pass more.
			return !maps.Equal(o.Labels, n.Labels) ||
				!maps.Equal(o.Annotations, n.Annotations) ||
				!o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
				!slices.Equal(o.Finalizers, n.Finalizers) ||
				o.Status.NodeName != n.Status.NodeName || o.Status.ProviderID != n.Status.ProviderID ||
				claimReadyOf(o) != claimReadyOf(n) ||
				launchOf(o) != launchOf(n) ||
				!reflect.DeepEqual(o.Spec, n.Spec) ||
				!reflect.DeepEqual(o.Status.Allocatable, n.Status.Allocatable)
		},
	}
}

func claimReadyOf(c *karpv1.NodeClaim) string {
	for _, s := range c.Status.Conditions {
		if s.Type == "Ready" {
			return string(s.Status)
		}
	}
	return ""
}

// launch is what the fail-fast fact reads of a claim's Launched condition
// (surge.LaunchFailure): its status, reason and text, not when it was
// last written. The cache keeps the condition only while it is not True.
type launch struct{ status, reason, message string }

func launchOf(c *karpv1.NodeClaim) launch {
	for _, s := range c.Status.Conditions {
		if s.Type == karpv1.ConditionTypeLaunched {
			return launch{string(s.Status), s.Reason, s.Message}
		}
	}
	return launch{}
}

func readyOf(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}
