package actions

import (
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Targets are the objects one pass's steps may write, as the pass observed
// them: every write decides on these copies (or on what the pass's own
// earlier write returned) and locks on their resourceVersion.
type Targets struct {
	// Now is the pass's clock reading: every stamp of the pass uses it.
	Now time.Time
	// Pool is the NodePool as observed.
	Pool *karpv1.NodePool
	// Slot is the rotation slot whose keys the anchor steps write
	// (docs/design.md#throughput); 0 writes slot 1's. InForce is the
	// number of rotations the pool may have in flight: a start's anchor
	// write never makes more (0: no bound, as for the window's steps).
	Slot    v1alpha1.Slot
	InForce int
	// Claim names the rotation's NodeClaim: the anchor, or the candidate.
	Claim string
	// ClaimObject is that claim as observed; nil when it no longer exists.
	ClaimObject *karpv1.NodeClaim
	// OldNode is the claim's node; SurgeHost the placeholder's node.
	OldNode, SurgeHost *corev1.Node
	// SurgeHostClaim is the surge host's NodeClaim, recorded on the old
	// claim as surge-claim.
	SurgeHostClaim *karpv1.NodeClaim
	// InducedClaim is the surge NodeClaim the attempt induced, the one a
	// rollback may reap; nil when there is none.
	InducedClaim *karpv1.NodeClaim
	// UnservableReason is Karpenter's word that it cannot serve the
	// placeholder (Unschedulable or LaunchFailed), empty when it said
	// nothing: the failure reason claim-state records for a fail-fast.
	UnservableReason string
	// Placeholder is the placeholder Pod as observed, nil when absent;
	// PlaceholderKey is where it lives.
	Placeholder    *corev1.Pod
	PlaceholderKey types.NamespacedName
	// NewPlaceholder is the Pod placeholder-ensure creates; nil when the
	// pass did not size one.
	NewPlaceholder *corev1.Pod
	// Stranded are the pool's rotation artefacts its anchor does not name,
	// as observed; repair-stranded re-checks each on a fresh read.
	Stranded Stranded
	// Lost is a claim Karpenter deleted for expiry with no rotation of it
	// in flight that the pool does not record yet; nil when none.
	Lost *Lost
	// PrePull are the attempt's pre-pull Pods as observed, in every
	// namespace (the controller's first); PrePullStale those an earlier
	// attempt left, which prepull-ensure deletes before its creates and the
	// deletes take with the rest; NewPrePull those prepull-ensure creates,
	// none when the pass built none (docs/design.md#pre-pull).
	PrePull, PrePullStale, NewPrePull []*corev1.Pod
	// PrePullRecord is how the phase ended, as the pass observed it, for
	// prepull-record; PrePullFailed the images the Pod could not pull.
	PrePullRecord *v1alpha1.PrePullRecord
	PrePullFailed []string
}

// Lost is a claim lost to Karpenter's expiry, as the pass observed it
// (docs/design.md#coverage).
type Lost struct {
	Claim               string
	Deadline, DeletedAt time.Time
	// Why is why no rotation of it started: its census class at the last
	// pass that saw it before its deletion, in words.
	Why string
}

// Stranded are rotation artefacts no anchor names.
type Stranded struct {
	Claims       []*karpv1.NodeClaim
	Placeholders []*corev1.Pod
	Nodes        []*corev1.Node
}
