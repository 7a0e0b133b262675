package observe

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/census"
)

// blockerReader finds, for the census, the Pods on a claim's node that
// would block Karpenter's drain (docs/design.md#drain-blockers). It lists
// the node's Pods from the API server — once per node per pass: the
// placeholder's sizing reads the same list — and the PodDisruptionBudgets
// from the cache, once per pass and only when a Pod is found.
type blockerReader struct {
	o    *Observer
	obs  *Observation
	pdbs []policyv1.PodDisruptionBudget
	read bool
	err  error
}

func (b *blockerReader) blockers(ctx context.Context, c *karpv1.NodeClaim) []census.Blocker {
	if b.err != nil || c.Status.NodeName == "" {
		return nil
	}
	pods, err := b.o.podsOn(ctx, b.obs, c.Status.NodeName)
	if err != nil {
		b.err = err
		return nil
	}
	if len(pods) > 0 && !b.read {
		list := &policyv1.PodDisruptionBudgetList{}
		if err := b.o.Cache.List(ctx, list); err != nil {
			b.err = fmt.Errorf("listing PodDisruptionBudgets: %w", err)
			return nil
		}
		b.pdbs, b.read = list.Items, true
	}
	return DrainBlockers(pods, b.pdbs, b.obs.Now)
}

// podsOn lists the Pods bound to node from the API server, once per pass.
func (o *Observer) podsOn(ctx context.Context, obs *Observation, node string) ([]corev1.Pod, error) {
	if pods, ok := obs.podsOn[node]; ok {
		return pods, nil
	}
	list := &corev1.PodList{}
	if err := o.API.List(ctx, list, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return nil, fmt.Errorf("listing Pods on node %s: %w", node, err)
	}
	if obs.podsOn == nil {
		obs.podsOn = map[string][]corev1.Pod{}
	}
	obs.podsOn[node] = list.Items
	return list.Items, nil
}

// DrainBlockers are the Pods Karpenter's drain would wait on, as Karpenter
// v1.13's terminator decides it: a Pod it drains (not terminal, not a
// mirror Pod, not tolerating its disrupted taint, not already terminating)
// that carries an active karpenter.sh/do-not-disrupt — "true", or a
// duration the Pod has not yet run for — or that a PodDisruptionBudget
// allowing no disruption now selects.
func DrainBlockers(pods []corev1.Pod, pdbs []policyv1.PodDisruptionBudget, now time.Time) []census.Blocker {
	var out []census.Blocker
	for i := range pods {
		p := &pods[i]
		if !drained(p) {
			continue
		}
		name := p.Namespace + "/" + p.Name
		switch {
		case doNotDisrupt(p, now):
			out = append(out, census.Blocker{Pod: name, Reason: census.BlockedDoNotDisrupt})
		case p.Status.Phase != corev1.PodPending && guarded(p, pdbs):
			out = append(out, census.Blocker{Pod: name, Reason: census.BlockedPDB})
		}
	}
	return out
}

// drained reports whether Karpenter's drain evicts (or waits on) the Pod.
func drained(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
		return false
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "Node" {
			return false // a mirror Pod: the kubelet's, never evicted
		}
	}
	for _, t := range p.Spec.Tolerations {
		if t.ToleratesTaint(klog.Background(), &karpv1.DisruptedNoScheduleTaint, false) {
			return false // Karpenter leaves a Pod tolerating its taint in place
		}
	}
	if p.Labels[v1alpha1.LabelSurgeFor] != "" {
		return false // our own placeholder
	}
	return true
}

// doNotDisrupt reports an active karpenter.sh/do-not-disrupt: "true", or a
// duration the Pod has not yet run for (an unparsable value is ignored, as
// Karpenter ignores it).
func doNotDisrupt(p *corev1.Pod, now time.Time) bool {
	v, ok := p.Annotations[karpv1.DoNotDisruptAnnotationKey]
	if !ok {
		return false
	}
	if v == "true" {
		return true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return false
	}
	if p.Status.StartTime == nil {
		return true
	}
	return now.Sub(p.Status.StartTime.Time) < d
}

// guarded reports a Pod the eviction API will keep refusing: one that two
// or more PodDisruptionBudgets select (never evictable), or one that a
// budget selects which allows no disruption with every Pod it counts
// healthy — held there until someone changes it. A budget at zero only
// because some of its Pods are not Ready — as after every drain, while the
// evicted Pods start elsewhere — usually recovers as they become Ready, and
// is not counted (docs/design.md#drain-blockers). Pending Pods are evicted
// without a budget check, so the caller skips them.
func guarded(p *corev1.Pod, pdbs []policyv1.PodDisruptionBudget) bool {
	selecting := 0
	held := false
	for i := range pdbs {
		b := &pdbs[i]
		if b.Namespace != p.Namespace || b.Spec.Selector == nil {
			continue
		}
		// policy/v1: an empty selector selects every Pod of the namespace.
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		selecting++
		held = held || (b.Status.DisruptionsAllowed == 0 && b.Status.CurrentHealthy >= b.Status.ExpectedPods)
	}
	return held || selecting > 1
}
