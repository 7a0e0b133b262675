package observe

import (
	"strings"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// The start gates a Memory records for the candidate a pass did not start:
// the first that was closed as the observation shows them.
const (
	heldWindowClosed = "windowClosed"
	heldBlackout     = "blackout"
	heldWindowEnding = "windowEnding"
	heldFrozen       = "frozen"
	heldInfeasible   = "infeasible"
	heldSlotsFull    = "slotsFull"
	heldClusterCap   = "clusterCap"
	heldBudget       = "disruptionBudget"
	heldOther        = "other"
)

// startHeldBy is the first start gate the observation shows closed; the
// gates only the table computes (cooldown, failure pause, headroom) are
// "other".
func startHeldBy(obs *Observation) string {
	freeze, _ := time.Parse(time.RFC3339, obs.Pool.Annotations[v1alpha1.AnnotationFreeze])
	switch {
	case !obs.WindowOpen:
		return heldWindowClosed
	case blackoutNow(obs):
		return heldBlackout
	case obs.WindowEnd.Ending:
		return heldWindowEnding
	case freeze.After(obs.Now):
		return heldFrozen
	case schedule.HasFatal(obs.Findings):
		return heldInfeasible
	case obs.FreeSlot() == nil:
		return heldSlotsFull
	case obs.Snapshot.Pool.ClusterCapReached:
		return heldClusterCap
	case obs.FreeSlot().Snapshot.Pool.BudgetReached:
		return heldBudget
	}
	return heldOther
}

var whyClass = map[string]string{
	census.ClassNotDue:              "it was not yet past its age threshold — an ageThreshold override or a policy applied late leaves less lead than the deadline needs",
	census.ClassInBackoff:           "it was in retry backoff after a failed rotation",
	census.ClassOptedOut:            "its node carried an operator's karpenter.sh/do-not-disrupt",
	census.ClassNotReady:            "it was not Ready",
	census.ClassSkipped:             "an operator's noderotation.io/skip-until held it",
	census.ClassNoDeadline:          "the policy saw no deadline for it (no window occurrence)",
	census.ClassBadState:            "its noderotation.io/state held no known state",
	census.ClassDrainBlocked:        "it was passed over: Pods on its node would block the drain",
	census.ClassExpired:             "its rotation had ended at the deadline",
	census.ClassInFlight:            "its rotation was in flight (it ended before the deletion)",
	classOutranked:                  "it was due, but behind claims with earlier deadlines: the pool's rotations could not keep up",
	"candidate:" + heldOther:        "it was due, held by a start gate (cooldown, failure pause, or headroom under the NodePool's limits)",
	"candidate:" + heldWindowClosed: "it was due, and the maintenance window was closed",
	"candidate:" + heldBlackout:     "it was due, held by a blackout",
	"candidate:" + heldWindowEnding: "it was due, and too little of the open window was left to start it",
	"candidate:" + heldFrozen:       "it was due, and the pool was frozen",
	"candidate:" + heldInfeasible:   "it was due, and the pool had a fatal finding",
	"candidate:" + heldSlotsFull:    "it was due, and every rotation slot of the pool was in use",
	"candidate:" + heldClusterCap:   "it was due, held by the cluster's -max-concurrent-rotations",
	"candidate:" + heldBudget:       "it was due, held by the pool's disruption budget: Karpenter's disruptions and the pool's rotations used what the NodePool's budget or maxUnavailable allows",
}

// why says a remembered class in words; a claim this process never saw
// alive says so.
func why(class string) string {
	if s, ok := whyClass[class]; ok {
		return "last seen in class " + strings.SplitN(class, ":", 2)[0] + ": " + s
	}
	if class == "" {
		return "this controller process did not see it before its deletion (started after it, or the pool was not governed)"
	}
	return "last seen in class " + class
}
