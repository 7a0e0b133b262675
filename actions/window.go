package actions

import (
	"context"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// windowStamp records window-opened-at, only if absent on a fresh copy.
func windowStamp(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	np := p.freshPool()
	out, err := conditional(ctx, p, np, func() (bool, error) {
		if np.Annotations[v1alpha1.AnnotationWindowOpenedAt] != "" {
			return false, nil
		}
		setAnn(np, v1alpha1.AnnotationWindowOpenedAt, p.Now().UTC().Format(time.RFC3339))
		return true, nil
	})
	return Result{Outcome: out, Did: "window-opened-at: " + string(out)}, err
}

// windowClear clears window-opened-at, conditional on the stamp this pass
// observed: the clear lands before any emission, so at most one pass
// announces a missed window (a stop in between drops the signal).
func windowClear(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	seen := p.Obs.Pool.Annotations[v1alpha1.AnnotationWindowOpenedAt]
	np := p.freshPool()
	out, err := conditional(ctx, p, np, func() (bool, error) {
		if seen == "" || np.Annotations[v1alpha1.AnnotationWindowOpenedAt] != seen {
			return false, nil
		}
		delAnn(np, v1alpha1.AnnotationWindowOpenedAt)
		return true, nil
	})
	return Result{Outcome: out, Did: "clear window-opened-at: " + string(out), Values: map[string]string{"windowOpenedAt": seen}}, err
}

// announce hands the announcement to the observability layer.
func announce(ctx context.Context, p *Pass, args map[string]any) (Result, error) {
	what, _ := args["what"].(string)
	if p.Announcer != nil {
		p.Announcer.Announce(ctx, what, p)
	}
	return Result{Outcome: Done, Did: "announced " + what}, nil
}
