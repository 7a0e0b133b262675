package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// Observe sets the pool's gauges from one pass's observation (§4.2 metric
// details). An ungoverned pool's series are dropped instead.
func Observe(o *observe.Observation) {
	name := o.Pool.Name
	conflicted := len(o.Governance.Conflict) > 0 || (o.Governance.Governed() && o.PolicyErr != nil)
	if !o.Governed() && !conflicted {
		Forget(name)
		return
	}
	PolicyConflict.WithLabelValues(name).Set(b2f(conflicted))
	c := o.Census
	Candidates.WithLabelValues(name).Set(float64(c.Candidates))
	InBackoff.WithLabelValues(name).Set(float64(c.InBackoff))
	InProgress.WithLabelValues(name).Set(b2f(o.Pool.Annotations[v1alpha1.AnnotationActiveRotation] != ""))
	ShortLeadNodes.WithLabelValues(name).Set(float64(c.ShortLead))
	RetryCount.WithLabelValues(name).Set(float64(c.MaxRetry))
	WindowActive.WithLabelValues(name).Set(b2f(o.WindowOpen))
	freeze := 0.0
	if t, err := time.Parse(time.RFC3339, o.Pool.Annotations[v1alpha1.AnnotationFreeze]); err == nil && t.After(o.Now) {
		freeze = float64(t.Unix())
	}
	FreezeUntil.WithLabelValues(name).Set(freeze)
	stuck := o.Subject != nil && o.Subject.DeletionTimestamp != nil &&
		o.Subject.Annotations[v1alpha1.AnnotationState] == v1alpha1.StateDraining &&
		o.Now.Sub(o.Subject.DeletionTimestamp.Time) > time.Duration(o.Snapshot.Policy.DrainBound)
	DrainStuck.WithLabelValues(name).Set(b2f(stuck))
	derived(o)
}

// derived sets the schedule gauges: all 0 when expireAfter is Never; with
// no occurrence, only throughput_capacity is 0.
func derived(o *observe.Observation) {
	name, d := o.Pool.Name, o.Derivation
	if o.PolicyErr != nil || d.NoDeadline {
		for _, g := range []*prometheus.GaugeVec{AgeThreshold, RotationChances, ThroughputCapacity, TRotEstimate, TRotBound, WindowPeriod} {
			g.WithLabelValues(name).Set(0)
		}
		return
	}
	AgeThreshold.WithLabelValues(name).Set(d.A.Seconds())
	RotationChances.WithLabelValues(name).Set(float64(d.G))
	ThroughputCapacity.WithLabelValues(name).Set(float64(d.C))
	TRotEstimate.WithLabelValues(name).Set(d.TRotEst.Seconds())
	TRotBound.WithLabelValues(name).Set(d.TRot.Seconds())
	WindowPeriod.WithLabelValues(name).Set(d.Cycle.P.Seconds())
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
