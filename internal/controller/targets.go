package controller

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/prepull"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// PlaceholderConfig is how this controller's placeholder Pods are made.
type PlaceholderConfig struct {
	Namespace, PriorityClass, Image string
	// SkipHostnamePreference leaves out the placeholder's preference to
	// avoid the old node and near-deadline nodes by kubernetes.io/hostname:
	// Karpenter v1.0 and v1.1 ignore a Pod whose preferred node affinity
	// names that label (docs/design.md#karpenter-versions).
	SkipHostnamePreference bool
	// PrePullImage is the controller's own image, whose binary the
	// pre-pull Pod's init container installs as its no-op
	// (docs/design.md#pre-pull); no Pod is built without it.
	// PrePullImagePullSecrets are the Secrets of the controller's
	// namespace it is pulled with (the controller Pod's own, from the
	// chart).
	PrePullImage            string
	PrePullImagePullSecrets []string
}

// targets are what this pass's steps may write, from what it observed: the
// pool, the rotation's claim and nodes, the placeholder (and, when the pass
// sized one, the Pod to create) and the surge claim a rollback may reap.
func (r *NodePoolReconciler) targets(obs *observe.Observation) actions.Targets {
	t := actions.Targets{
		Now: obs.Now, Pool: obs.Pool, Slot: obs.Slot, InForce: obs.InForce.N,
		Claim: obs.SubjectName, ClaimObject: obs.Subject,
		OldNode: obs.OldNode, SurgeHost: obs.SurgeHost, SurgeHostClaim: obs.SurgeHostClaim,
		InducedClaim: obs.InducedClaim, Placeholder: obs.Placeholder,
		PlaceholderKey: types.NamespacedName{Namespace: r.Placeholder.Namespace, Name: surge.PlaceholderName(obs.SubjectName)},
	}
	if obs.Unservable != nil {
		t.UnservableReason = obs.Unservable.Reason
	}
	if l := obs.Lost; l != nil {
		t.Lost = &actions.Lost{Claim: l.Claim, Deadline: l.Deadline, DeletedAt: l.DeletedAt, Why: l.Why}
	}
	t.Stranded = actions.Stranded{Claims: obs.Stranded.Claims, Placeholders: obs.Stranded.Placeholders, Nodes: obs.Stranded.Nodes}
	t.PrePull, t.PrePullStale, t.NewPrePull = obs.PrePull.Pods, obs.PrePull.Stale, r.prePullPods(obs)
	t.PrePullRecord, t.PrePullFailed = obs.PrePull.Record, obs.PrePull.Failed
	if obs.Subject != nil && obs.Sizing != nil {
		avoid := obs.AvoidHostnames
		if r.Placeholder.SkipHostnamePreference {
			avoid = nil
		}
		t.NewPlaceholder = surge.Placeholder{
			Namespace: r.Placeholder.Namespace, PriorityClass: r.Placeholder.PriorityClass, Image: r.Placeholder.Image,
			Pool: obs.Pool, Claim: obs.Subject, OldNode: obs.OldNode, Requests: obs.Sizing.Requests,
			Required: obs.Settings.Required, Preferred: obs.Settings.Preferred, AvoidHostnames: avoid,
			Spread: obs.InForce.N > 1,
		}.Build()
	}
	return t
}

// prePullPods are the pre-pull Pods to create: those of the namespaces the
// observation found missing, only with a placeholder to depend on and a
// surge node to bind to.
func (r *NodePoolReconciler) prePullPods(obs *observe.Observation) []*corev1.Pod {
	if r.Placeholder.PrePullImage == "" || obs.Placeholder == nil || obs.SurgeHost == nil || len(obs.PrePull.Missing) == 0 {
		return nil
	}
	p := prepull.Pod{
		Namespace: r.Placeholder.Namespace, PriorityClass: r.Placeholder.PriorityClass,
		Tolerations: obs.Placeholder.Spec.Tolerations, Installer: r.Placeholder.PrePullImage,
		InstallerPullSecrets: r.Placeholder.PrePullImagePullSecrets,
		Claim:                obs.SubjectName, Pool: obs.Pool.Name, Node: obs.SurgeHost.Name, Owner: obs.Placeholder,
		Timeout: obs.Settings.PrePull.Timeout, Images: obs.PrePull.Images,
	}
	if obs.Subject != nil {
		p.ClaimUID = obs.Subject.UID
	}
	var out []*corev1.Pod
	for _, pod := range p.Pods() {
		if slices.Contains(obs.PrePull.Missing, pod.Namespace) {
			out = append(out, pod)
		}
	}
	return out
}
