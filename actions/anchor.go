package actions

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/conditional"
)

// The anchor protocol's writes on the NodePool (docs/design.md#anchor-protocol).
var (
	anchorWriteAction = action{
		spec: engine.ActionSpec{Name: ActionAnchorWrite, Role: engine.RoleAnchorWrite, Reports: true,
			Description: "write noderotation.io/active-rotation on the NodePool, only if absent, conflict-checked; mode forcefulFallback also writes rotation-mode, the draining mirror and draining-at in the same write; mode readopt names a stranded claim that a fresh read still shows pending or draining (with the draining mirror for a draining one); mode supersede does the same in place of an anchor naming a claim that is gone, only while the pool's anchor still names it, or releases that anchor when the live claim is no longer in flight",
			Args:        map[string]engine.ArgSpec{"mode": required(str("surge", "forcefulFallback", "readopt", "supersede"))}},
		run: anchorWrite,
	}
	anchorReleaseAction = action{
		spec: engine.ActionSpec{Name: ActionAnchorRelease, Role: engine.RoleAnchorEnd, Reports: true,
			Description: "completion: one conditional write, only while the anchor names this rotation, that reads the outcome (draining mirror → success) from the same copy the write is locked on, stamps last-rotation-at on success and clears the rotation-scoped set"},
		run: anchorRelease,
	}
	anchorClearAction = action{
		spec: engine.ActionSpec{Name: ActionAnchorClear, Role: engine.RoleAnchorEnd, Reports: true,
			Description: "clear the rotation-scoped set (active-rotation, active-rotation-state, draining-at, surge-wait, rotation-mode) only while the anchor names this rotation; optionally stamp last-failure-at (now, or max with the claim's failed-at); with ifClaimFailed, only while a fresh read shows the claim still failed",
			Args:        map[string]engine.ArgSpec{"lastFailureAt": str("now", "max"), "ifNoMirror": flag, "ifClaimFailed": flag}},
		run: anchorClear,
	}
	poolMirrorAction = action{
		spec: engine.ActionSpec{Name: ActionPoolMirror, Reports: true,
			Description: "write the NodePool's rotation mirror, only while the anchor names this rotation: active-rotation-state=draining (optionally draining-at, surge-wait and surge-node, once each; never over expired or governance-lost), or =expired or =governance-lost, which only one pass can write (it elects the pass that announces it) and neither over the other",
			Args:        map[string]engine.ArgSpec{"state": str("draining", "expired", "governance-lost"), "drainingAt": flag, "surgeWait": flag, "surgeNode": flag}},
		run: poolMirror,
	}
)

func (p *Pass) stamp() string { return p.Targets.Now.UTC().Format(time.RFC3339) }

// full: the copy anchors as many rotations as the pool may have in flight,
// so a start or a re-adoption would make one more
// (docs/design.md#throughput).
func (p *Pass) full(np *karpv1.NodePool) bool {
	return p.Targets.InForce > 0 && len(v1alpha1.Anchors(np.Annotations)) >= p.Targets.InForce
}

// anchoredElsewhere: a slot other than the pass's names the claim on the
// copy, so anchoring it here would give one rotation two slots.
func (p *Pass) anchoredElsewhere(np *karpv1.NodePool, claim string) bool {
	for _, a := range v1alpha1.Anchors(np.Annotations) {
		if a.Claim == claim && a.Slot != max(p.Targets.Slot, 1) {
			return true
		}
	}
	return false
}

// anchorWrite writes the anchor only if absent: the write that elects the
// pass starting the rotation. In surge mode it also clears any orphaned
// rotation-scoped key, so a stale draining mirror can never be read as this
// rotation's outcome; forcefulFallback writes the mode, the draining mirror
// and draining-at in the same write.
func anchorWrite(ctx context.Context, p *Pass, args map[string]any) (Result, error) {
	switch args["mode"] {
	case "readopt":
		return readopt(ctx, p, p.Targets.Claim, "")
	case "supersede":
		if len(p.Targets.Stranded.Claims) == 0 {
			return Result{Outcome: Raced, Did: "supersede anchor " + p.Targets.Claim + ": no stranded claim"}, nil
		}
		return readopt(ctx, p, p.Targets.Stranded.Claims[0].Name, p.Targets.Claim)
	}
	np := p.pool()
	out, err := p.write(ctx, np, func() (bool, error) {
		if np.Annotations[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotation)] != "" ||
			p.anchoredElsewhere(np, p.Targets.Claim) || p.full(np) {
			return false, nil
		}
		conditional.DeleteAnnotations(np, p.Targets.Slot.RotationScoped()...)
		conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotation), p.Targets.Claim)
		// the start marker: an anchor this controller wrote always has a
		// mirror, so one without is never a live rotation's (orphanedAnchor)
		conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotationState), v1alpha1.StatePending)
		if args["mode"] == "forcefulFallback" {
			conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationRotationMode), v1alpha1.RotationModeFallback)
			conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotationState), v1alpha1.StateDraining)
			conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationDrainingAt), p.stamp())
		}
		return true, nil
	})
	return Result{Outcome: out, Did: "anchor " + p.Targets.Claim + ": " + string(out)}, err
}

// anchorRelease is completion's one conditional write: only while the
// anchor names this rotation, it reads the outcome from the same copy the
// write is locked on
// (draining mirror → success, stamping last-rotation-at; else expired) and
// clears the rotation-scoped set. Only the pass that released announces.
func anchorRelease(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	np := p.pool()
	var rel *Released
	out, err := p.write(ctx, np, func() (bool, error) {
		a := np.Annotations
		if a[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotation)] != p.Targets.Claim {
			return false, nil
		}
		rel = &Released{Outcome: ReleasedExpired, DrainingAt: a[p.Targets.Slot.Key(v1alpha1.AnnotationDrainingAt)], SurgeWait: a[p.Targets.Slot.Key(v1alpha1.AnnotationSurgeWait)],
			SurgeNode: a[p.Targets.Slot.Key(v1alpha1.AnnotationSurgeNode)], Mode: a[p.Targets.Slot.Key(v1alpha1.AnnotationRotationMode)],
			PrePull: a[p.Targets.Slot.Key(v1alpha1.AnnotationPrePull)]}
		switch a[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotationState)] {
		case v1alpha1.StateExpired:
			// the pass that recorded the expiry announced it; a pass on a
			// cache that missed the record releases without a word
			rel.Outcome = ReleasedRecorded
		case v1alpha1.StateGovernanceLost:
			// the drain went on while no policy governed the pool: its end
			// is no success, whoever governs the pool now
			rel.Outcome = ReleasedUngoverned
		case v1alpha1.StateDraining:
			rel.Outcome = ReleasedSuccess
			conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationLastRotationAt), p.stamp())
			if took, ok := surgeRotationTook(a, p.Targets.Slot, p.Targets.Now); ok {
				conditional.SetAnnotation(np, v1alpha1.AnnotationRecentRotations, v1alpha1.AppendRecentRotation(a[v1alpha1.AnnotationRecentRotations], took))
			}
		}
		conditional.DeleteAnnotations(np, p.Targets.Slot.RotationScoped()...)
		return true, nil
	})
	if out != Claimed {
		// only the releasing pass reads an outcome: a raced release has none
		return Result{Outcome: out, Did: "release anchor " + p.Targets.Claim + ": " + string(out)}, err
	}
	return Result{Outcome: out, Did: "release anchor " + p.Targets.Claim + ": " + string(out) + " " + rel.Outcome, Released: rel}, err
}

// surgeRotationTook is a successful surge rotation's surge wait plus drain
// (draining-at to now), from what the pool recorded; a surge-less one, or
// one whose record is missing or malformed, teaches the forecast nothing
// (docs/design.md#window-end).
func surgeRotationTook(a map[string]string, slot v1alpha1.Slot, now time.Time) (time.Duration, bool) {
	if a[slot.Key(v1alpha1.AnnotationRotationMode)] == v1alpha1.RotationModeFallback {
		return 0, false
	}
	wait, err := time.ParseDuration(a[slot.Key(v1alpha1.AnnotationSurgeWait)])
	if err != nil || wait < 0 {
		return 0, false
	}
	draining, err := time.Parse(time.RFC3339, a[slot.Key(v1alpha1.AnnotationDrainingAt)])
	if err != nil || now.Before(draining) {
		return 0, false
	}
	return wait + now.Sub(draining), true
}

// anchorClear clears the rotation-scoped set only while the anchor names
// this rotation, optionally stamping last-failure-at (now, or the max of
// the pool's and the claim's failed-at: a crash-recovery release must not
// shorten the pause).
func anchorClear(ctx context.Context, p *Pass, args map[string]any) (Result, error) {
	if args["ifClaimFailed"] == true {
		// A release decided on a cache that has not seen this claim's
		// retry (failed → pending, written by the pass before) would strand
		// the retry: the claim is read fresh, and the pass stops as stale
		// unless it is still failed.
		fresh := &karpv1.NodeClaim{}
		err := p.Fresh.Get(ctx, client.ObjectKey{Name: p.Targets.Claim}, fresh)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return Result{}, fmt.Errorf("reading NodeClaim %s before releasing its anchor: %w", p.Targets.Claim, err)
		case fresh.Annotations[v1alpha1.AnnotationState] != v1alpha1.StateFailed:
			p.stale = true
			return Result{Outcome: Stale, Did: "clear anchor " + p.Targets.Claim + ": the claim is no longer failed (stale)"}, nil
		}
	}
	np := p.pool()
	mirror := ""
	out, err := p.write(ctx, np, func() (bool, error) {
		if np.Annotations[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotation)] != p.Targets.Claim {
			return false, nil
		}
		if args["ifNoMirror"] == true && np.Annotations[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotationState)] != "" {
			return false, nil // a copy with a mirror is a live rotation's
		}
		mirror = np.Annotations[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotationState)]
		conditional.DeleteAnnotations(np, p.Targets.Slot.RotationScoped()...)
		switch args["lastFailureAt"] {
		case "now":
			conditional.SetAnnotation(np, v1alpha1.AnnotationLastFailureAt, p.stamp())
		case "max":
			if t := laterFailure(np.Annotations[v1alpha1.AnnotationLastFailureAt], p.claimAnnotation(v1alpha1.AnnotationFailedAt)); t != "" {
				conditional.SetAnnotation(np, v1alpha1.AnnotationLastFailureAt, t)
			}
		}
		return true, nil
	})
	if out != Claimed {
		mirror = "" // only the clearing pass reads what it cleared
	}
	return Result{Outcome: out, Did: "clear anchor " + p.Targets.Claim + ": " + string(out), Mirror: mirror}, err
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

// poolMirror writes the rotation mirror only while the anchor names this
// rotation: a mirror written after another pass released the anchor would
// be an orphan. The draining mirror comes with draining-at, surge-wait and
// surge-node, once each; the expired mirror is written once, by the one
// pass that then announces the expiry (a second pass finds it and races).
func poolMirror(ctx context.Context, p *Pass, args map[string]any) (Result, error) {
	np := p.pool()
	if state, _ := args["state"].(string); state == v1alpha1.StateExpired || state == v1alpha1.StateGovernanceLost {
		out, err := p.write(ctx, np, func() (bool, error) {
			a := np.Annotations
			switch a[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotationState)] {
			case v1alpha1.StateExpired, v1alpha1.StateGovernanceLost, state:
				// each is recorded once; an expiry never overwrites a
				// drain held after governance loss (its end is said and
				// counted by neither)
				return false, nil
			}
			if a[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotation)] != p.Targets.Claim {
				return false, nil
			}
			conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotationState), state)
			return true, nil
		})
		return Result{Outcome: out, Did: state + " mirror: " + string(out)}, err
	}
	out, err := p.write(ctx, np, func() (bool, error) {
		a := np.Annotations
		if a[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotation)] != p.Targets.Claim {
			return false, nil
		}
		switch a[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotationState)] {
		case v1alpha1.StateExpired, v1alpha1.StateGovernanceLost:
			// an expiry recorded meanwhile is never turned back into a
			// drain, nor a drain nobody governed into a success
			return false, nil
		}
		conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotationState), v1alpha1.StateDraining)
		if args["surgeNode"] == true && a[p.Targets.Slot.Key(v1alpha1.AnnotationSurgeNode)] == "" && p.Targets.SurgeHost != nil {
			conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationSurgeNode), p.Targets.SurgeHost.Name)
		}
		if args["drainingAt"] == true && a[p.Targets.Slot.Key(v1alpha1.AnnotationDrainingAt)] == "" {
			conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationDrainingAt), p.stamp())
		}
		if args["surgeWait"] == true && a[p.Targets.Slot.Key(v1alpha1.AnnotationSurgeWait)] == "" {
			if started, err := time.Parse(time.RFC3339, p.claimAnnotation(v1alpha1.AnnotationStartedAt)); err == nil {
				conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationSurgeWait), p.Targets.Now.Sub(started).Round(time.Second).String())
			}
		}
		return true, nil
	})
	return Result{Outcome: out, Did: "draining mirror: " + string(out)}, err
}

// releaseSuperseded clears an anchor naming a gone claim whose live
// rotation ended before the superseding write: anchor-clear's write (the
// pass's claim is the gone one), reporting what it superseded.
func releaseSuperseded(ctx context.Context, p *Pass, live, superseded string) (Result, error) {
	res, err := anchorClear(ctx, p, nil)
	res.Superseded, res.Mirror = superseded, ""
	res.Did += " (" + live + " is no longer in flight)"
	return res, err
}

// readopt writes the anchor back for a stranded claim — one still pending
// or draining on a fresh read, so a cache that lags a rollback never
// re-adopts a claim that was just released — only while the pool's anchor
// is still what the pass found: absent, or (superseding) the name of a
// claim that is gone. A draining claim gets its draining mirror back in
// the same write, so its completion counts.
func readopt(ctx context.Context, p *Pass, name, superseded string) (Result, error) {
	c := &karpv1.NodeClaim{}
	err := p.Fresh.Get(ctx, client.ObjectKey{Name: name}, c)
	if err != nil && !apierrors.IsNotFound(err) {
		return Result{}, fmt.Errorf("reading NodeClaim %s: %w", name, err)
	}
	state := c.Annotations[v1alpha1.AnnotationState]
	if err != nil || (state != v1alpha1.StatePending && state != v1alpha1.StateDraining) {
		if superseded != "" {
			// the live rotation ended meanwhile: the anchor naming a gone
			// claim is released all the same, never read as its outcome
			return releaseSuperseded(ctx, p, name, superseded)
		}
		if err != nil {
			return Result{Outcome: Gone, Did: "re-adopt " + name + ": gone"}, nil
		}
		return Result{Outcome: Raced, Did: "re-adopt " + c.Name + ": no longer in flight"}, nil
	}
	np := p.pool()
	out, err := p.write(ctx, np, func() (bool, error) {
		if np.Annotations[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotation)] != superseded ||
			p.anchoredElsewhere(np, c.Name) || (superseded == "" && p.full(np)) {
			return false, nil
		}
		lost := np.Annotations[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotationState)] == v1alpha1.StateGovernanceLost
		// the rotation's own figures (draining-at, surge-wait, surge-node,
		// mode), if the anchor alone was removed, are kept; beside an
		// anchor naming a gone claim they may be that claim's (an older
		// copy of the pool), so they go, as a clear would take them
		if superseded != "" {
			conditional.DeleteAnnotations(np, p.Targets.Slot.RotationScoped()...)
		}
		conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotation), c.Name)
		mirror := v1alpha1.StatePending
		switch {
		case state == v1alpha1.StateDraining && lost:
			// a drain held after governance loss stays no success
			mirror = v1alpha1.StateGovernanceLost
		case state == v1alpha1.StateDraining:
			mirror = v1alpha1.StateDraining
		}
		conditional.SetAnnotation(np, p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotationState), mirror)
		return true, nil
	})
	res := Result{Outcome: out, Did: "re-adopt " + c.Name + " (" + state + "): " + string(out), Readopted: state, Anchored: c.Name, Superseded: superseded}
	if superseded != "" {
		res.Did += " in place of " + superseded
	}
	return res, err
}
