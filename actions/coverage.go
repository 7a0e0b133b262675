package actions

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/conditional"
)

// lossRecordAction records a claim lost to Karpenter's expiry on its pool
// (docs/design.md#coverage): the record is what makes the count once —
// across passes, restarts and instances, only the pass whose write added
// the claim says it.
var lossRecordAction = action{
	spec: engine.ActionSpec{Name: ActionLossRecord, Reports: true, Description: "add the claim lost to Karpenter's expiry to the NodePool's expired-unrotated, only if absent, dropping entries older than a week; reports whether this pass recorded it"},
	run:  lossRecord,
}

func lossRecord(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	l := p.Targets.Lost
	if l == nil {
		return Result{Outcome: Done, Did: "loss-record: no claim lost"}, nil
	}
	// Another instance may have recorded the claim's expiry as its
	// rotation's (pending.force-expiry writes the claim's state before it
	// clears the anchor) after this pass's cache showed it unanchored: the
	// claim is read fresh, once, as this rare write is about to be made.
	mid, err := rotatedAtExpiry(ctx, p, l.Claim)
	if err != nil {
		return Result{Outcome: Raced, Did: "record " + l.Claim + " in expired-unrotated: the claim could not be read"}, err
	}
	if mid {
		return Result{Outcome: Raced, Did: "record " + l.Claim + " in expired-unrotated: its rotation met the deadline"}, nil
	}
	np := p.pool()
	out, err := p.write(ctx, np, func() (bool, error) {
		raw := np.Annotations[v1alpha1.AnnotationExpiredUnrotated]
		if losses, _ := v1alpha1.ParseLosses(raw); v1alpha1.Recorded(losses, l.Claim) {
			return false, nil
		}
		for _, a := range v1alpha1.Anchors(np.Annotations) {
			if a.Claim == l.Claim {
				return false, nil // anchored on the copy the write locks on
			}
		}
		conditional.SetAnnotation(np, v1alpha1.AnnotationExpiredUnrotated,
			v1alpha1.RecordLoss(raw, v1alpha1.Loss{Claim: l.Claim, DeletedAt: l.DeletedAt}, p.Targets.Now))
		return true, nil
	})
	res := Result{Outcome: out, Did: "record " + l.Claim + " in expired-unrotated: " + string(out)}
	if out == Claimed {
		res.Lost = l
	}
	return res, err
}

// rotatedAtExpiry reports whether the claim, read fresh, carries the state
// of a rotation in flight or recorded expired; a claim already gone says
// nothing against the record.
func rotatedAtExpiry(ctx context.Context, p *Pass, claim string) (bool, error) {
	c := &karpv1.NodeClaim{}
	if err := p.Fresh.Get(ctx, client.ObjectKey{Name: claim}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading NodeClaim %s: %w", claim, err)
	}
	return v1alpha1.RotationMetDeadline(c.Annotations[v1alpha1.AnnotationState]), nil
}
