package surge

import corev1 "k8s.io/api/core/v1"

// Stays says why a Pod on the old node is not one the drain moves to the
// surge node; Moves when it is. The placeholder is sized to the Pods that
// move, and the pre-pull phase pulls their images (docs/design.md#pre-pull).
type Stays string

const (
	Moves          Stays = ""
	StaysDaemonSet Stays = "daemonSet" // the surge node runs its own copy
	StaysMirror    Stays = "mirror"    // a static Pod, bound to its node
	StaysTerminal  Stays = "terminal"  // Succeeded or Failed: nothing to restart
	StaysPinned    Stays = "pinned"    // can only run on the old node
)

// StaysBehind classifies p, a Pod on node (nil: unknown, nothing pinned).
func StaysBehind(p *corev1.Pod, node *corev1.Node) Stays {
	switch {
	case isDaemonSetPod(p):
		return StaysDaemonSet
	case isMirrorPod(p):
		return StaysMirror
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return StaysTerminal
	case pinnedTo(p, node):
		return StaysPinned
	}
	return Moves
}
