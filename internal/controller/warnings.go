package controller

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// Every Warning is deduplicated by its object, reason and key (the
// annotation, or the fact), so several at once never take turns re-firing
// and spending the pool's Event budget.

// warnBadState reports an anchor that must not be acted on: no step is
// taken this pass.
func (r *NodePoolReconciler) warnBadState(ctx context.Context, pool string, bad *observe.BadStateError) {
	np := &karpv1.NodePool{}
	if r.Client.Get(ctx, client.ObjectKey{Name: pool}, np) == nil {
		r.Announcer.WarnKeyed(pool, "InvalidAnnotation/"+bad.Object+"/"+bad.Key, np, "InvalidAnnotation", bad.Error()+"; no step is taken")
	}
}

// warnUndecidable reports a fact the table cannot evaluate (a malformed
// annotation it reads): no step is taken this pass.
func (r *NodePoolReconciler) warnUndecidable(obs *observe.Observation, fe *engine.FactError) {
	r.Announcer.WarnKeyed(obs.Pool.Name, "InvalidAnnotation/fact/"+fe.Fact, obs.Pool, "InvalidAnnotation", fmt.Sprintf("cannot decide: %v; no step is taken", fe))
}

// warnFindings emits each schedule warning as a deduplicated Event on the
// pool (fatal findings are logged by idle.infeasible, never evented),
// ShortLead on each claim that cannot get its K chances, and
// InvalidAnnotation for each malformed value that kept a claim out of the
// census.
func (r *NodePoolReconciler) warnFindings(obs *observe.Observation) {
	pool := obs.Pool.Name
	if obs.Governed() {
		for _, f := range obs.Findings {
			if f.Severity == schedule.Warning {
				r.Announcer.Warn(pool, obs.Pool, f.Reason, f.Message+"; "+f.Remedy)
			}
		}
		for i := range obs.Claims {
			c := &obs.Claims[i]
			if e := c.Spec.ExpireAfter.Duration; e != nil && obs.Derivation.ShortLead(*e) {
				r.Announcer.WarnKeyed(pool, "ShortLead/"+c.Name, c, "ShortLead",
					fmt.Sprintf("expireAfter %s is not longer than K·P + t_rot = %s: the schedule cannot guarantee %d chances; rotated best-effort first",
						schedule.FormatDuration(*e), schedule.FormatDuration(obs.Derivation.Lead), obs.Settings.MinRotationChances))
			}
			if f := obs.Census.Figures[c.Name]; f.SkipsPastLastStart(obs.Now) {
				r.Announcer.WarnKeyed(pool, "SkipPastDeadline/"+c.Name, c, "SkipPastDeadline",
					fmt.Sprintf("%s %s is not before its last usable start %s (deadline %s, less t_rot, the windows and the blackouts): it is never rotated gracefully, and Karpenter's expiry will replace it forcefully",
						v1alpha1.AnnotationSkipUntil, f.SkipUntil.UTC().Format(time.RFC3339), f.LastStart.UTC().Format(time.RFC3339), f.Deadline.UTC().Format(time.RFC3339)))
			}
		}
	}
	for _, b := range obs.BadAnnotations {
		effect := b.Effect
		if effect == "" {
			effect = "the claim is skipped"
		}
		r.Announcer.WarnKeyed(pool, "InvalidAnnotation/"+b.Object+"/"+b.Key, obs.Pool, "InvalidAnnotation",
			fmt.Sprintf("%s: annotation %s=%q is %s; %s", b.Object, b.Key, b.Value, b.Problem, effect))
	}
}
