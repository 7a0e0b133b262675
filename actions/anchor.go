package actions

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// freshPool is an empty NodePool for a fresh read: never a copy of the
// cached object, whose maps a decode would merge into.
func (p *Pass) freshPool() *karpv1.NodePool {
	return &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p.Obs.Pool.Name}}
}

// anchorWrite writes the anchor only if absent (§5.2): the write that
// elects the pass starting the rotation. In surge mode it also clears any
// orphaned rotation-scoped key, so a stale draining mirror can never be
// read as this rotation's outcome; forcefulFallback writes the mode, the
// draining mirror and draining-at in the same write.
func anchorWrite(ctx context.Context, p *Pass, args map[string]any) (Result, error) {
	np := p.freshPool()
	now := p.Now().UTC().Format(time.RFC3339)
	out, err := conditional(ctx, p, np, func() (bool, error) {
		if np.Annotations[v1alpha1.AnnotationActiveRotation] != "" {
			return false, nil
		}
		delAnn(np, v1alpha1.RotationScoped...)
		setAnn(np, v1alpha1.AnnotationActiveRotation, p.Claim())
		if args["mode"] == "forcefulFallback" {
			setAnn(np, v1alpha1.AnnotationRotationMode, v1alpha1.RotationModeFallback)
			setAnn(np, v1alpha1.AnnotationActiveRotationState, v1alpha1.StateDraining)
			setAnn(np, v1alpha1.AnnotationDrainingAt, now)
		}
		return true, nil
	})
	return Result{Outcome: out, Did: "anchor " + p.Claim() + ": " + string(out)}, err
}

// anchorRelease is completion's one conditional write (§5.2): only while the
// anchor names this rotation, it reads the outcome from the same fresh copy
// (draining mirror → success, stamping last-rotation-at; else expired) and
// clears the rotation-scoped set. Only the pass that released announces.
func anchorRelease(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	np := p.freshPool()
	vals := map[string]string{}
	out, err := conditional(ctx, p, np, func() (bool, error) {
		a := np.Annotations
		if a[v1alpha1.AnnotationActiveRotation] != p.Claim() {
			return false, nil
		}
		vals["outcome"] = "expired"
		if a[v1alpha1.AnnotationActiveRotationState] == v1alpha1.StateDraining {
			vals["outcome"] = "success"
			setAnn(np, v1alpha1.AnnotationLastRotationAt, p.Now().UTC().Format(time.RFC3339))
		}
		vals["drainingAt"] = a[v1alpha1.AnnotationDrainingAt]
		vals["surgeWait"] = a[v1alpha1.AnnotationSurgeWait]
		vals["mode"] = a[v1alpha1.AnnotationRotationMode]
		delAnn(np, v1alpha1.RotationScoped...)
		return true, nil
	})
	return Result{Outcome: out, Did: "release anchor " + p.Claim() + ": " + string(out) + " " + vals["outcome"], Values: vals}, err
}

// anchorClear clears the rotation-scoped set only while the anchor names
// this rotation, optionally stamping last-failure-at (now, or the max of
// the pool's and the claim's failed-at: a crash-recovery release must not
// shorten the pause).
func anchorClear(ctx context.Context, p *Pass, args map[string]any) (Result, error) {
	np := p.freshPool()
	out, err := conditional(ctx, p, np, func() (bool, error) {
		if np.Annotations[v1alpha1.AnnotationActiveRotation] != p.Claim() {
			return false, nil
		}
		delAnn(np, v1alpha1.RotationScoped...)
		switch args["lastFailureAt"] {
		case "now":
			setAnn(np, v1alpha1.AnnotationLastFailureAt, p.Now().UTC().Format(time.RFC3339))
		case "max":
			if t := laterFailure(np.Annotations[v1alpha1.AnnotationLastFailureAt], p.claimAnnotation(v1alpha1.AnnotationFailedAt)); t != "" {
				setAnn(np, v1alpha1.AnnotationLastFailureAt, t)
			}
		}
		return true, nil
	})
	return Result{Outcome: out, Did: "clear anchor " + p.Claim() + ": " + string(out)}, err
}

// laterFailure returns the later of two RFC3339 stamps; a malformed or
// empty one loses.
func laterFailure(pool, claim string) string {
	tp, errP := time.Parse(time.RFC3339, pool)
	tc, errC := time.Parse(time.RFC3339, claim)
	switch {
	case errC != nil:
		if errP != nil {
			return ""
		}
		return pool
	case errP != nil || tc.After(tp):
		return claim
	}
	return pool
}

// poolMirror writes the draining mirror, and once each draining-at and
// surge-wait, only while the anchor names this rotation: a mirror written
// after another pass released the anchor would be an orphan.
func poolMirror(ctx context.Context, p *Pass, args map[string]any) (Result, error) {
	np := p.freshPool()
	out, err := conditional(ctx, p, np, func() (bool, error) {
		a := np.Annotations
		if a[v1alpha1.AnnotationActiveRotation] != p.Claim() {
			return false, nil
		}
		setAnn(np, v1alpha1.AnnotationActiveRotationState, v1alpha1.StateDraining)
		if args["drainingAt"] == true && a[v1alpha1.AnnotationDrainingAt] == "" {
			setAnn(np, v1alpha1.AnnotationDrainingAt, p.Now().UTC().Format(time.RFC3339))
		}
		if args["surgeWait"] == true && a[v1alpha1.AnnotationSurgeWait] == "" {
			if started, err := time.Parse(time.RFC3339, p.claimAnnotation(v1alpha1.AnnotationStartedAt)); err == nil {
				setAnn(np, v1alpha1.AnnotationSurgeWait, p.Now().Sub(started).Round(time.Second).String())
			}
		}
		return true, nil
	})
	return Result{Outcome: out, Did: "draining mirror: " + string(out)}, err
}

// claimAnnotation reads the rotation claim's annotation as last written in
// this pass, or as observed.
func (p *Pass) claimAnnotation(key string) string {
	for i := len(p.Results) - 1; i >= 0; i-- {
		if v, ok := p.Results[i].Values["claim:"+key]; ok {
			return v
		}
	}
	if p.Obs.Subject == nil {
		return ""
	}
	return p.Obs.Subject.Annotations[key]
}
