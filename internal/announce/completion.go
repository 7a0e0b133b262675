package announce

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// rotationCompleted announces the outcome the anchor release read from the
// pool it cleared: success with the drain and surge figures, or a late
// force-expiry.
func (an *Announcer) rotationCompleted(s step) {
	res, _ := s.last(actions.ActionAnchorRelease)
	v := res.Released
	if v == nil {
		return // no outcome read: the release did not land in this pass
	}
	pool, now := s.pool(), s.view.Now
	switch v.Outcome {
	case actions.ReleasedRecorded:
		return // the expiry was announced by the pass that recorded it
	case actions.ReleasedUngoverned:
		// GovernanceLost was said by the pass that recorded the loss
		s.log.Info("rotation complete", "outcome", "governance-lost", "mode", mode(v.Mode))
		return
	}
	if v.Outcome != actions.ReleasedSuccess {
		metrics.Completed.WithLabelValues(pool, "expired").Inc()
		s.log.Info("rotation complete", "outcome", "expired", "mode", mode(v.Mode))
		return
	}
	metrics.Completed.WithLabelValues(pool, "success").Inc()
	kv := []any{"outcome", "success", "mode", mode(v.Mode)}
	drainingAt, err := time.Parse(time.RFC3339, v.DrainingAt)
	prePull := an.prePullAtCompletion(s, v)
	if err == nil {
		// the drain begins when the pre-pull phase ends, if there was one
		drain := now.Sub(drainingAt) - prePull.Wait
		kv = append(kv, "drain", drain.Round(time.Second).String())
		metrics.Duration.WithLabelValues(pool, "drain").Observe(drain.Seconds())
	} else if v.DrainingAt != "" {
		an.garbled(s, v1alpha1.AnnotationDrainingAt, v.DrainingAt, "not an RFC3339 time")
	}
	wait, waitErr := time.ParseDuration(v.SurgeWait)
	if waitErr != nil && v.SurgeWait != "" {
		an.garbled(s, v1alpha1.AnnotationSurgeWait, v.SurgeWait, "not a Go duration")
	}
	path := ""
	if host := surgeHostAtCompletion(s, v); host != "" {
		kv = append(kv, "surgeNode", host)
		if waitErr == nil && !drainingAt.IsZero() {
			kv = append(kv, "surgeWait", wait.String())
			path = surge.Path(claimOnNode(s.view, host), drainingAt.Add(-wait))
			if path != "" {
				kv = append(kv, "surgePath", path)
			}
			kv = append(kv, "total", now.Sub(drainingAt.Add(-wait)).Round(time.Second).String())
		}
	}
	if v.PrePull != "" && prePull.Ended != "" {
		kv = append(kv, "prePull", map[string]any{"ended": prePull.Ended, "wait": prePull.Wait.String(),
			"pulled": prePull.Pulled, "failed": prePull.Failed, "unfinished": prePull.Unfinished, "skipped": prePull.Skipped})
	}
	s.log.Info("rotation complete", kv...)
	msg := fmt.Sprintf("old NodeClaim %s finalized", s.claim())
	if path != "" {
		msg += "; surgePath " + path
	}
	an.event(s.view.Pool, corev1.EventTypeNormal, "RotationCompleted", msg)
}

// prePullAtCompletion is the rotation's pre-pull record, zero when it had
// none or the record is malformed (reported, and the drain's figure then
// includes the phase).
func (an *Announcer) prePullAtCompletion(s step, v *actions.Released) v1alpha1.PrePullRecord {
	if v.PrePull == "" {
		return v1alpha1.PrePullRecord{}
	}
	r, err := v1alpha1.ParsePrePullRecord(v.PrePull)
	if err != nil {
		an.garbled(s, v1alpha1.AnnotationPrePull, v.PrePull, err.Error())
		return v1alpha1.PrePullRecord{}
	}
	return r
}

// garbled reports a malformed figure of the rotation the completion line
// had to leave out: said once per key and value, never silently dropped.
func (an *Announcer) garbled(s step, key, value, problem string) {
	an.warnKeyed(s.pool(), "InvalidAnnotation/NodePool/"+key, s.view.Pool, "InvalidAnnotation",
		fmt.Sprintf("NodePool/%s: annotation %s=%q is %s; the completion figures omit it", s.pool(), key, value, problem))
}

// surgeHostAtCompletion is the surge node the rotation recorded on the pool
// at surge-ready (so a completion retried after its unfreeze landed keeps
// it), else the node the unfreeze step of this pass released (the old node
// is gone by completion, so it is the surge host).
func surgeHostAtCompletion(s step, released *actions.Released) string {
	if released.SurgeNode != "" {
		return released.SurgeNode
	}
	res, ok := s.last(actions.ActionUnfreeze)
	if !ok || len(res.Unfrozen) == 0 {
		return ""
	}
	return res.Unfrozen[0]
}

func claimOnNode(o *View, node string) *karpv1.NodeClaim {
	for i := range o.Claims {
		if o.Claims[i].Status.NodeName == node {
			return &o.Claims[i]
		}
	}
	return nil
}
