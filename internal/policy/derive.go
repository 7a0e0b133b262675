package policy

import (
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// Derive computes the schedule figures of a pool governed by these settings
// as seen at now: E and tGP from the NodePool template, the rest from the
// policy. Observation and the policy status both use it.
func (s Settings) Derive(pool *karpv1.NodePool, now time.Time) (schedule.Inputs, schedule.Derivation) {
	tmpl := pool.Spec.Template.Spec
	var tgp *time.Duration
	if tmpl.TerminationGracePeriod != nil {
		tgp = &tmpl.TerminationGracePeriod.Duration
	}
	inputs := s.Inputs(tmpl.ExpireAfter.Duration, tgp)
	return inputs, schedule.Derive(inputs, s.Calendar.Measure(now))
}
