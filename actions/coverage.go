package actions

import (
	"context"

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
	np := p.pool()
	out, err := p.write(ctx, np, func() (bool, error) {
		raw := np.Annotations[v1alpha1.AnnotationExpiredUnrotated]
		if losses, _ := v1alpha1.ParseLosses(raw); v1alpha1.Recorded(losses, l.Claim) {
			return false, nil
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
