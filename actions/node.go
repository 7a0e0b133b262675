package actions

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/conditional"
)

// The node markers of a rotation (docs/design.md#surge).
var (
	freezeAction = action{
		spec: engine.ActionSpec{Name: ActionFreeze, Description: "karpenter.sh/do-not-disrupt=true plus do-not-disrupt-owned (only when we set it) and surge-for on a node",
			Args: map[string]engine.ArgSpec{"node": required(str("old", "surgeHost"))}},
		run: freeze,
	}
	unfreezeAction = action{
		spec: engine.ActionSpec{Name: ActionUnfreeze, Description: "remove our do-not-disrupt (by the owned marker) and surge-for from every node paired with the rotation"},
		run:  unfreeze,
	}
	cordonAction = action{
		spec: engine.ActionSpec{Name: ActionCordon, Description: "set spec.unschedulable on the old node with our cordoned marker, unless someone else cordoned it"},
		run:  cordon,
	}
	uncordonAction = action{
		spec: engine.ActionSpec{Name: ActionUncordon, Description: "undo our cordon of the old node (by the cordoned marker only)"},
		run:  uncordon,
	}
)

// freeze protects a node from voluntary disruption for the rotation:
// karpenter.sh/do-not-disrupt=true with our ownership marker (only when we
// set it — an operator's own "true" is never touched; another value is
// overwritten and owned) and the surge-for label pairing it with the claim.
func freeze(ctx context.Context, p *Pass, args map[string]any) (Result, error) {
	node := p.Targets.OldNode
	if args["node"] == "surgeHost" {
		node = p.Targets.SurgeHost
	}
	if node == nil {
		return Result{Outcome: Done, Did: fmt.Sprintf("freeze %v: no node", args["node"])}, nil
	}
	// Decided on the pass's copy, written with its resourceVersion: a cache
	// that has not seen an operator's do-not-disrupt costs a conflict and a
	// decision on a fresher cache, never the adoption of the operator's
	// annotation.
	n := p.node(node.Name)
	operatorOwned := false
	out, err := p.write(ctx, n, func() (bool, error) {
		a := n.Annotations
		operatorOwned = a[v1alpha1.KarpenterDoNotDisrupt] == "true" && a[v1alpha1.AnnotationDoNotDisruptOwned] != "true"
		if !operatorOwned {
			conditional.SetAnnotation(n, v1alpha1.KarpenterDoNotDisrupt, "true")
			conditional.SetAnnotation(n, v1alpha1.AnnotationDoNotDisruptOwned, "true")
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[v1alpha1.LabelSurgeFor] = p.Targets.Claim
		return true, nil
	})
	if err != nil {
		return Result{}, err
	}
	switch out {
	case Gone:
		return Result{Outcome: Done, Did: fmt.Sprintf("freeze %s: node gone", n.Name)}, nil
	case Stale:
		return Result{Outcome: Stale, Did: fmt.Sprintf("freeze %s: stale", n.Name)}, nil
	}
	return Result{Outcome: Done, Did: fmt.Sprintf("froze %s (operator-owned: %v)", n.Name, operatorOwned)}, nil
}

// unfreeze reverses freeze on every node paired with the rotation: the
// surge-for label always, do-not-disrupt only where our marker says we set it.
func unfreeze(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	nodes := &corev1.NodeList{}
	if err := p.Client.List(ctx, nodes, client.MatchingLabels{v1alpha1.LabelSurgeFor: p.Targets.Claim}); err != nil {
		return Result{}, fmt.Errorf("listing nodes paired with %s: %w", p.Targets.Claim, err)
	}
	var names []string
	if len(nodes.Items) > 0 {
		if ok, err := p.confirmElection(ctx); !ok || err != nil {
			return unconfirmedResult("unfreeze"), err
		}
	}
	for i := range nodes.Items {
		n := nodes.Items[i].DeepCopy()
		if p.confirmedKeys()[copyKey{"Node", n.Name}] {
			n = p.node(n.Name) // the server's answer to this pass's own write: newer than the list
		}
		orig := n.DeepCopy()
		delete(n.Labels, v1alpha1.LabelSurgeFor)
		if n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned] == "true" {
			delete(n.Annotations, v1alpha1.KarpenterDoNotDisrupt)
			delete(n.Annotations, v1alpha1.AnnotationDoNotDisruptOwned)
		}
		if err := patch(ctx, p.Client, orig, n); err != nil {
			return Result{}, err
		}
		p.hold(n)
		names = append(names, n.Name)
	}
	return Result{Outcome: Done, Did: fmt.Sprintf("unfroze %v", names), Unfrozen: names}, nil
}

// cordon sets spec.unschedulable on the old node with our marker, unless
// someone else already cordoned it: decided on the pass's copy and written
// with its resourceVersion, so an operator's cordon is never adopted.
func cordon(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	if p.Targets.OldNode == nil {
		return Result{Outcome: Done, Did: "cordon: no node"}, nil
	}
	n := p.node(p.Targets.OldNode.Name)
	out, err := p.write(ctx, n, func() (bool, error) {
		if n.Spec.Unschedulable {
			return n.Annotations[v1alpha1.AnnotationCordoned] == "true", nil // ours: in place; else not ours
		}
		n.Spec.Unschedulable = true
		conditional.SetAnnotation(n, v1alpha1.AnnotationCordoned, "true")
		return true, nil
	})
	return Result{Outcome: Done, Did: fmt.Sprintf("cordon %s: %s", n.Name, out)}, err
}

// uncordon undoes only our own cordon, by the marker, decided on the pass's
// copy and written with its resourceVersion.
func uncordon(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	if p.Targets.OldNode == nil {
		return Result{Outcome: Done, Did: "uncordon: no node"}, nil
	}
	n := p.node(p.Targets.OldNode.Name)
	out, err := p.write(ctx, n, func() (bool, error) {
		if n.Annotations[v1alpha1.AnnotationCordoned] != "true" {
			return false, nil
		}
		n.Spec.Unschedulable = false
		conditional.DeleteAnnotations(n, v1alpha1.AnnotationCordoned)
		return true, nil
	})
	return Result{Outcome: Done, Did: fmt.Sprintf("uncordon %s: %s", n.Name, out)}, err
}

// patch merge-patches the difference between orig and n, without a lock:
// for idempotent markers whose precondition is not a race. A target that
// is gone needs no marker.
func patch(ctx context.Context, c client.Client, orig, n client.Object) error {
	patch := client.MergeFrom(orig)
	data, err := patch.Data(n)
	if err != nil || string(data) == "{}" {
		return err
	}
	if err := c.Patch(ctx, n, patch); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patching %s: %w", client.ObjectKeyFromObject(n), err)
	}
	return nil
}
