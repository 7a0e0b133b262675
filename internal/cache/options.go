// Package cache shapes the controller's informer cache: which objects it
// holds (Options) and how lean — the transforms that drop what no fact
// reads, and the sharing of the strings, maps and parts the cached objects
// repeat (docs/architecture.md).
package cache

import (
	"strings"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// Options keeps the informer cache small, because it holds every Node and
// NodeClaim of the cluster (docs/performance.md#memory): Pods only in the
// controller's namespace and only ours, the placeholders and pre-pull Pods (no cluster-wide Pod
// cache), only the Nodes of a NodePool (every Node a fact reads is a
// claim's, a placeholder's host or a surge node, and Karpenter's nodes
// carry karpenter.sh/nodepool from registration; a managed node group's
// or the control plane's nodes are never cached), and Nodes and NodeClaims
// without what no fact reads.
//
// Every watch is client-go's own (its reflector, its decoding, its
// retries); what the cache drops is dropped by a transform, after the
// decode, so the cache holds only the lean copy.
//
// A trimmed copy is safe to write from: every write is a merge patch
// computed between two copies that lack the same fields, so it never
// names — and never removes — what the cache dropped; nothing cached is
// written back whole with Update.
//
// everyNamespace holds the controller's Pods of every namespace (its
// pre-pull Pods there, with usePullSecrets): still only those labelled
// as its own.
func Options(namespace string, everyNamespace bool) crcache.Options {
	// both Pods a rotation makes, the placeholder and the pre-pull Pod
	// (docs/design.md#pre-pull), carry this label; nothing else the
	// namespace runs does (the chart's own Pods are Helm's)
	ours, _ := labels.NewRequirement(v1alpha1.LabelManagedBy, selection.Equals, []string{v1alpha1.ManagedBy})
	inPool, _ := labels.NewRequirement(karpv1.NodePoolLabelKey, selection.Exists, nil)
	strip := crcache.TransformStripManagedFields()
	pods := crcache.ByObject{Namespaces: map[string]crcache.Config{namespace: {}}, Label: labels.NewSelector().Add(*ours), Transform: strip}
	if everyNamespace {
		pods.Namespaces = nil
	}
	return crcache.Options{ByObject: map[client.Object]crcache.ByObject{
		&corev1.Pod{}:       pods,
		&karpv1.NodePool{}:  {Transform: strip},
		&karpv1.NodeClaim{}: {Transform: LeanClaim},
		&corev1.Node{}:      {Label: labels.NewSelector().Add(*inPool), Transform: LeanNode},
		// Few and small; read only when a candidate's node has Pods.
		&policyv1.PodDisruptionBudget{}: {Transform: strip},
	}}
}

// LeanNode keeps of a Node what the facts read — metadata (its label and
// annotation strings shared with the other cached objects; its maps are
// its own, since a real node's annotations name its own address, volume
// IDs and the like, and sharing would rarely find a twin), spec
// and the Ready condition — and drops managedFields, its owner (the
// NodeClaim; the facts pair them by node name), the image list (often the
// largest part of a Node), capacity and allocatable (sizing reads the
// NodeClaim's), volumes, addresses, node info and every other condition,
// which the kubelet rewrites on each heartbeat. Its labels are kept
// whole: a policy may name any of them for the placeholder to replicate.
func LeanNode(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	n.ManagedFields, n.OwnerReferences = nil, nil
	n.Labels, n.Annotations = interned.strings(n.Labels), interned.strings(n.Annotations)
	n.Status.Images = nil
	n.Status.Capacity = nil
	n.Status.Allocatable = nil
	n.Status.VolumesInUse = nil
	n.Status.VolumesAttached = nil
	n.Status.Addresses = nil
	n.Status.NodeInfo = corev1.NodeSystemInfo{}
	n.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{}
	n.Status.Config = nil
	n.Status.RuntimeHandlers = nil
	n.Status.Features = nil
	n.Status.Conditions = onlyCondition(n.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == corev1.NodeReady })
	return n, nil
}

// LeanClaim keeps of a NodeClaim its metadata — of its labels only its
// NodePool's and this controller's (claimLabelKept), the only ones a fact
// reads, which makes a pool's claims' label maps one shared map, and its
// annotations shared the same way (a pool's claims not in rotation carry
// the same ones) — its spec but the requests (its requirements and node
// class shared with its pool's other claims: shared.go),
// its node name, provider ID, allocatable (the placeholder's clamp; shared
// between the claims of an instance type), Ready
// condition, a Launched condition that is not True (a surge claim's
// launch failure, docs/design.md#fail-fast), and Initialized,
// InstanceTerminating and Rebooting while True (whether Karpenter counts
// the claim toward the pool's disruption budget and as disrupting it,
// docs/design.md#disruption-budget; each changes a few times in a claim's
// life at most). Capacity, the requests
// Karpenter launched it for and the image ID move no fact; Karpenter's
// other conditions (Launched once True, Registered, Consolidatable,
// Drifted, …) churn without moving one.
func LeanClaim(obj any) (any, error) {
	c, ok := obj.(*karpv1.NodeClaim)
	if !ok {
		return obj, nil
	}
	c.ManagedFields = nil
	c.Labels, c.Annotations = interned.shared(keptClaimLabels(c.Labels)), interned.shared(c.Annotations)
	c.Spec.Resources = karpv1.ResourceRequirements{}
	c.Spec.Requirements, c.Spec.NodeClassRef = sharedRequirements(c.Spec.Requirements), sharedNodeClassRef(c.Spec.NodeClassRef)
	c.Status.Allocatable = sharedResources(c.Status.Allocatable)
	c.Status.Capacity = nil
	c.Status.ImageID = ""
	c.Status.Conditions = onlyCondition(c.Status.Conditions, func(s status.Condition) bool {
		switch s.Type {
		case "Ready":
			return true
		case karpv1.ConditionTypeLaunched:
			return s.Status != metav1.ConditionTrue
		case karpv1.ConditionTypeInitialized, karpv1.ConditionTypeInstanceTerminating, karpv1.ConditionTypeRebooting:
			return s.Status == metav1.ConditionTrue
		}
		return false
	})
	return c, nil
}

// claimLabelKept: a NodeClaim's labels a fact reads. The pool's name
// lists a pool's claims (observe) and names it in metrics, Events and
// explain; this controller's own are its markers. The rest — instance
// type, zone, architecture, hostname — the facts read from the claim's
// Node or its requirements instead.
func claimLabelKept(k string) bool {
	return k == karpv1.NodePoolLabelKey || strings.HasPrefix(k, v1alpha1.Prefix)
}

// keptClaimLabels returns l without the labels no fact reads: l itself
// when it has none of those, else a new map. It never writes l, which may
// be a map the cache already shares: the informer can run the transform
// again on an object it already holds (the initial events of a watch-list
// sync pass it twice).
func keptClaimLabels(l map[string]string) map[string]string {
	drops := false
	for k := range l {
		if !claimLabelKept(k) {
			drops = true
			break
		}
	}
	if !drops {
		return l
	}
	out := make(map[string]string, 2)
	for k, v := range l {
		if claimLabelKept(k) {
			out[k] = v
		}
	}
	return out
}

func onlyCondition[T any](cs []T, keep func(T) bool) []T {
	var out []T
	for _, c := range cs {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}
