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
	if EKSAutoMode(tmpl.NodeClassRef) {
		inputs.LifetimeCap = schedule.EKSAutoModeLifetime
	}
	return inputs, schedule.Derive(inputs, s.Calendar.Measure(now))
}

// EKSAutoModeGroup is the API group of EKS Auto Mode's NodeClass: a
// NodePool whose template references it runs on Auto Mode, which replaces
// a node at 21 days whatever its expireAfter. Self-managed Karpenter on
// AWS references karpenter.k8s.aws's EC2NodeClass instead
// (docs/operations.md#eks-auto-mode).
const EKSAutoModeGroup = "eks.amazonaws.com"

// EKSAutoMode reports whether a NodePool template's nodeClassRef is an EKS
// Auto Mode NodeClass.
func EKSAutoMode(ref *karpv1.NodeClassReference) bool {
	return ref != nil && ref.Group == EKSAutoModeGroup
}

// Assess is every finding of a pool governed by these settings: the
// schedule's layers 1 and 2 for the pool's population, and the policy's own
// warnings. The controller, the policy status and `rotationctl plan` all
// assemble findings here, so they never disagree
// (docs/design.md#findings).
func (s Settings) Assess(in schedule.Inputs, d schedule.Derivation, pop schedule.Population) []schedule.Finding {
	return append(schedule.Findings(in, d, pop), s.Findings()...)
}

// Sized resolves the settings' concurrency for a pool of pop over the
// cycle cy: the inputs and derivation at the number of rotations in force
// (C grows with it), and that number with why. Observation, the policy
// status and `rotationctl plan` all size a pool here
// (docs/design.md#throughput).
func (s Settings) Sized(in schedule.Inputs, cy schedule.Cycle, pop schedule.Population) (schedule.Inputs, schedule.Derivation, schedule.InForce) {
	f := s.Concurrency.Resolve(in, cy, pop)
	in.MaxUnavailable = f.N
	return in, schedule.Derive(in, cy), f
}
