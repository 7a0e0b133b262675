package surge

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Ready is surge_ready (docs/design.md#surge): the placeholder is Running,
// not terminating, bound to a Ready node that is not the candidate's and
// whose karpenter.sh/nodepool label is the pool.
func Ready(placeholder *corev1.Pod, host *corev1.Node, candidateNode, pool string) bool {
	if placeholder == nil || host == nil || placeholder.DeletionTimestamp != nil {
		return false
	}
	if placeholder.Status.Phase != corev1.PodRunning || placeholder.Spec.NodeName == "" ||
		placeholder.Spec.NodeName != host.Name || host.Name == candidateNode {
		return false
	}
	return host.Labels[karpv1.NodePoolLabelKey] == pool && NodeReady(host)
}

// NodeReady reports the node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Path names which surge path (docs/design.md#surge) reserved the capacity:
// "provisioned" when the surge host's NodeClaim was created after the attempt
// started, "absorbed" when it existed before, and "" when the host's claim is
// unknown.
func Path(hostClaim *karpv1.NodeClaim, startedAt time.Time) string {
	if hostClaim == nil || startedAt.IsZero() {
		return ""
	}
	if CreatedSince(hostClaim, startedAt) {
		return "provisioned"
	}
	return "absorbed"
}

// CreatedSince reports whether a claim was created at or after t, at the
// one-second precision of creationTimestamp: a claim created in the same
// second as started-at counts as created after it (the placeholder that
// induces it is created after started-at is stamped).
func CreatedSince(c *karpv1.NodeClaim, t time.Time) bool {
	return !c.CreationTimestamp.Time.Before(t.Truncate(time.Second))
}
