package v1alpha1

import "strconv"

// The state model (docs/design.md#state-model): every key the controller
// reads or writes on NodePools, NodeClaims, Nodes and the placeholder Pod.
// All use the noderotation.io/ prefix except Karpenter's own do-not-disrupt.
const (
	Prefix = "noderotation.io/"

	// NodePool annotations.
	AnnotationActiveRotation      = Prefix + "active-rotation"       // anchor: the claim in flight
	AnnotationActiveRotationState = Prefix + "active-rotation-state" // "draining" mirror
	AnnotationDrainingAt          = Prefix + "draining-at"           // RFC3339, write-once
	AnnotationSurgeWait           = Prefix + "surge-wait"            // Go duration, write-once
	AnnotationRotationMode        = Prefix + "rotation-mode"         // "forceful-fallback"
	AnnotationSurgeNode           = Prefix + "surge-node"            // the surge host, write-once at surge-ready
	// AnnotationPrePull is the pre-pull phase's record (prepull.Record as
	// JSON), written once at its end (docs/design.md#pre-pull).
	AnnotationPrePull        = Prefix + "prepull"
	AnnotationLastFailureAt  = Prefix + "last-failure-at"  // RFC3339, gate B anchor
	AnnotationFreeze         = Prefix + "freeze"           // RFC3339, operator-set
	AnnotationLastRotationAt = Prefix + "last-rotation-at" // RFC3339, gate A anchor
	AnnotationWindowOpenedAt = Prefix + "window-opened-at" // RFC3339, window-missed evaluation
	// AnnotationRecentRotations is the surge wait + drain of the pool's
	// last successful surge rotations, oldest first, comma-separated Go
	// durations (at most RecentRotationsKept): the learned forecast of
	// docs/design.md#window-end.
	AnnotationRecentRotations = Prefix + "recent-rotations"
	// AnnotationExpiredUnrotated records the claims of the pool Karpenter
	// deleted for expiry with no rotation of them in flight, each once:
	// comma-separated <claim>@<RFC3339 deletion time>, kept for
	// LossesKept (docs/design.md#coverage).
	AnnotationExpiredUnrotated = Prefix + "expired-unrotated"

	// Old NodeClaim annotations.
	AnnotationState      = Prefix + "state"       // pending, draining, failed, expired
	AnnotationStartedAt  = Prefix + "started-at"  // RFC3339, readyTimeout deadline
	AnnotationFailedAt   = Prefix + "failed-at"   // RFC3339, backoff anchor
	AnnotationRetryCount = Prefix + "retry-count" // integer
	AnnotationSurgeClaim = Prefix + "surge-claim" // the induced surge NodeClaim
	// AnnotationFailureReason is why the last attempt failed: Timeout,
	// Unschedulable or LaunchFailed (docs/design.md#fail-fast).
	AnnotationFailureReason = Prefix + "failure-reason"
	// Operator requests on a NodeClaim (docs/design.md#manual-controls):
	// rotate-next "true" makes it the next candidate even before its age
	// threshold, until its rotation ends; skip-until (RFC3339) keeps it
	// from being a candidate before then.
	AnnotationRotateNext = Prefix + "rotate-next"
	AnnotationSkipUntil  = Prefix + "skip-until"

	// Node markers. SurgeFor is a label (on nodes and the placeholder Pod) so
	// the rotation's objects can be listed by selector.
	LabelSurgeFor = Prefix + "surge-for"
	LabelNodePool = Prefix + "nodepool" // on the placeholder, for the watch mapping
	// LabelManagedBy=ManagedBy marks the Pods a rotation makes (the
	// placeholder and the pre-pull Pod): the controller's cache holds
	// those Pods only.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "node-rotation-controller"
	// LabelPrePullFor names the claim whose rotation a pre-pull Pod serves
	// (docs/design.md#pre-pull).
	LabelPrePullFor             = Prefix + "prepull-for"
	AnnotationDoNotDisruptOwned = Prefix + "do-not-disrupt-owned"
	AnnotationCordoned          = Prefix + "cordoned"
	KarpenterDoNotDisrupt       = "karpenter.sh/do-not-disrupt"

	// Values of failure-reason (docs/design.md#fail-fast).
	FailureTimeout       = "Timeout"
	FailureUnschedulable = "Unschedulable"
	FailureLaunchFailed  = "LaunchFailed"

	// Values.
	StatePending  = "pending"
	StateDraining = "draining"
	StateFailed   = "failed"
	StateExpired  = "expired" // on a claim, and on the pool once an expiry is recorded
	// StateGovernanceLost is a pool mirror only: the pool lost its policy
	// after the old claim's delete was issued, so the drain cannot be
	// rolled back and its end is not a success (docs/design.md#governance).
	StateGovernanceLost  = "governance-lost"
	RotationModeFallback = "forceful-fallback"
)

// RotationScoped are the NodePool keys cleared together with the anchor: no
// companion field outlives the rotation (docs/design.md#state-model).
var RotationScoped = []string{
	AnnotationActiveRotation, AnnotationActiveRotationState, AnnotationDrainingAt,
	AnnotationSurgeWait, AnnotationRotationMode, AnnotationSurgeNode, AnnotationPrePull,
}

// NextRetryCount is the retry-count a failure write records after raw: one
// more than a valid count, 1 when it is absent or malformed (a failure
// never stays unrecorded for a bad value).
func NextRetryCount(raw string) string {
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		n = 0
	}
	return strconv.Itoa(n + 1)
}
