package actions

import (
	"context"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/conditional"
)

// The window-missed evaluation's stamps (docs/design.md#window-missed).
var (
	windowStampAction = action{
		spec: engine.ActionSpec{Name: ActionWindowStamp, Description: "stamp noderotation.io/window-opened-at on the NodePool, only if absent"},
		run:  windowStamp,
	}
	windowClearAction = action{
		spec: engine.ActionSpec{Name: ActionWindowClear, Reports: true, Description: "clear window-opened-at, conditional on the stamp this pass read; reports whether this pass cleared it"},
		run:  windowClear,
	}
)

// windowStamp records window-opened-at, only if absent on the pass's copy.
func windowStamp(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	np := p.pool()
	out, err := p.write(ctx, np, func() (bool, error) {
		if np.Annotations[v1alpha1.AnnotationWindowOpenedAt] != "" {
			return false, nil
		}
		conditional.SetAnnotation(np, v1alpha1.AnnotationWindowOpenedAt, p.stamp())
		return true, nil
	})
	return Result{Outcome: out, Did: "window-opened-at: " + string(out)}, err
}

// windowClear clears window-opened-at, conditional on the stamp this pass
// observed: the clear lands before any emission, so at most one pass
// announces a missed window (a stop in between drops the signal).
func windowClear(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	seen := p.Targets.Pool.Annotations[v1alpha1.AnnotationWindowOpenedAt]
	np := p.pool()
	out, err := p.write(ctx, np, func() (bool, error) {
		if seen == "" || np.Annotations[v1alpha1.AnnotationWindowOpenedAt] != seen {
			return false, nil
		}
		conditional.DeleteAnnotations(np, v1alpha1.AnnotationWindowOpenedAt)
		return true, nil
	})
	return Result{Outcome: out, Did: "clear window-opened-at: " + string(out), WindowOpenedAt: seen}, err
}
