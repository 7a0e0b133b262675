package announce

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/go-logr/logr"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
)

// The startup sweep's lines (docs/design.md#startup-sweep): the sweep says
// what it did through these, as a pass says it through Pass, so every
// line of either is worded here. They log under the logger's name
// "sweep".

// SweptClaim alerts on a claim the startup sweep failed: pending or
// draining with no anchor, which no crash point produces.
func (a *Announcer) SweptClaim(claim *karpv1.NodeClaim, from string) {
	a.sweepLog().Info("startup sweep failed a claim no anchor owns", "nodeclaim", claim.Name, "from", from)
	metrics.Completed.WithLabelValues(claim.Labels[karpv1.NodePoolLabelKey], "failure").Inc()
	a.Log.Info("rotation attempt failed", "reason", "startupSweep", "nodeclaim", claim.Name, "from", from)
	a.event(claim, corev1.EventTypeWarning, "RotationFailed", fmt.Sprintf("startup sweep: the claim was %s with no anchor owning it; marked failed", from))
}

// SweptPlaceholder: the sweep deleted a placeholder no anchor references.
func (a *Announcer) SweptPlaceholder(placeholder, claim string) {
	a.sweepLog().Info("startup sweep deleted a placeholder no anchor references", "placeholder", placeholder, "nodeclaim", claim)
}

// SweptPrePullPod: the sweep deleted a pre-pull Pod (namespace/name) no
// anchor references.
func (a *Announcer) SweptPrePullPod(pod, claim string) {
	a.sweepLog().Info("startup sweep deleted a pre-pull Pod no anchor references", "pod", pod, "nodeclaim", claim)
}

// SweptNode: the sweep reversed a node's markers no anchor references;
// did says which (markers.Reverse).
func (a *Announcer) SweptNode(node, did string) {
	a.sweepLog().Info("startup sweep "+did+" a node no anchor references", "node", node)
}

// SweptMirror: the sweep removed rotation-scoped keys from a pool without
// an anchor.
func (a *Announcer) SweptMirror(pool string) {
	a.sweepLog().Info("startup sweep removed an orphaned active-rotation-state", "nodepool", pool)
}

// SweepFailed: a step of the sweep failed; the sweep goes on with the next
// item (or, when it cannot list the pools, is skipped).
func (a *Announcer) SweepFailed(err error, doing string, kv ...any) {
	msg := "startup sweep: " + doing
	if strings.HasPrefix(doing, "skipped:") {
		msg = "startup sweep " + doing // the sweep did not run at all
	}
	a.sweepLog().Error(err, msg, kv...)
}

func (a *Announcer) sweepLog() logr.Logger { return a.Log.WithName("sweep") }
