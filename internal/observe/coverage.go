package observe

import (
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// CoverageOf is layer 2's verdict on a pool governed by s with these
// claims at now, sized as a pass sizes it (docs/design.md#coverage-verdict):
// the policy status reads it without a census, and without the nodes a
// surge claim is also known by (its surge-claim annotation and its
// creation since the rotation started name it).
func CoverageOf(s policy.Settings, pool *karpv1.NodePool, claims []karpv1.NodeClaim, now time.Time) schedule.Coverage {
	inputs, d := s.Derive(pool, now)
	pop := census.PopulationOf(claims, surge.InFlight(anchors(pool), claims, nil), d)
	return s.Coverage(inputs, d.Cycle, pool, pop, now)
}
