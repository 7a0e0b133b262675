package observe

import (
	"context"
	"fmt"
	"sort"

	"github.com/noderotation/node-rotation-controller/engine"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/markers"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// Stranded are a pool's rotation artefacts that its anchor does not name:
// left live by a lost or overwritten anchor (a hand edit, a replace of an
// older copy, a restore). The pool is idle only when there are none
// (docs/design.md#hardening).
type Stranded struct {
	// Claims are pending or draining claims of the pool other than the
	// anchored one; the one furthest along first (draining, then the
	// earliest started).
	Claims []*karpv1.NodeClaim
	// Placeholders are ours for this pool and another claim.
	Placeholders []*corev1.Pod
	// Nodes are the pool's nodes carrying our markers for another claim.
	Nodes []*corev1.Node
}

// The stranded fact's values, as Kind produces them.
var (
	strandedNone      = engine.UsesFactValue("stranded", "none")
	strandedClaim     = engine.UsesFactValue("stranded", "claim")
	strandedArtefacts = engine.UsesFactValue("stranded", "artefacts")
)

// Kind is the table's stranded fact: none, claim (a stranded claim, which
// an anchorless pool re-adopts) or artefacts (only placeholders or node
// markers, which are repaired).
func (s Stranded) Kind() string {
	switch {
	case len(s.Claims) > 0:
		return strandedClaim
	case len(s.Placeholders) > 0 || len(s.Nodes) > 0:
		return strandedArtefacts
	}
	return strandedNone
}

// artefacts lists the pool's nodes and, for a governed pool, its
// placeholders: once per pass, before the census, which leaves out of its
// base the surge claims they pair with a rotation (surgeClaims), and the
// stranded artefacts read them too.
func (o *Observer) artefacts(ctx context.Context, obs *Observation) error {
	nodes := &corev1.NodeList{}
	if err := o.Cache.List(ctx, nodes, client.MatchingLabels{karpv1.NodePoolLabelKey: obs.Pool.Name}); err != nil {
		return fmt.Errorf("listing the nodes of %s: %w", obs.Pool.Name, err)
	}
	obs.nodes = nodes.Items
	if !obs.Governed() {
		return nil
	}
	pods := &corev1.PodList{}
	if err := o.Cache.List(ctx, pods, client.InNamespace(o.Namespace), client.MatchingLabels{v1alpha1.LabelNodePool: obs.Pool.Name}); err != nil {
		return fmt.Errorf("listing the placeholders of %s: %w", obs.Pool.Name, err)
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; p.Labels[v1alpha1.LabelSurgeFor] != "" {
			obs.placeholders = append(obs.placeholders, p)
		}
	}
	return nil
}

// surgeClaims are the pool's claims that are surge claims of its
// rotations in flight (surge.InFlight), paired by the nodes' surge-for
// markers and the placeholders' bindings.
func (obs *Observation) surgeClaims() map[string]bool {
	pairs := map[string]string{}
	for i := range obs.nodes {
		if a := obs.nodes[i].Labels[v1alpha1.LabelSurgeFor]; a != "" {
			pairs[obs.nodes[i].Name] = a
		}
	}
	for _, p := range obs.placeholders {
		if p.Spec.NodeName != "" {
			pairs[p.Spec.NodeName] = p.Labels[v1alpha1.LabelSurgeFor]
		}
	}
	return surge.InFlight(anchors(obs.Pool), obs.Claims, pairs)
}

// anchors are the claims the pool's slots name.
func anchors(pool *karpv1.NodePool) []string {
	var out []string
	for _, a := range v1alpha1.Anchors(pool.Annotations) {
		out = append(out, a.Claim)
	}
	return out
}

// stranded finds what no anchor of this pool names. Every repair re-checks
// it on fresh reads: a cache that lags the pool's anchor only costs a read.
// Only a governed pool is looked at: an ungoverned one starts nothing, so
// nothing can overtake its stranded rotation, and what it left is the
// startup sweep's (docs/design.md#hardening).
func (o *Observer) stranded(ctx context.Context, obs *Observation) error {
	anchored := map[string]bool{}
	for _, a := range v1alpha1.Anchors(obs.Pool.Annotations) {
		anchored[a.Claim] = true
	}
	obs.paired = map[string]bool{}
	for i := range obs.nodes {
		if pair := obs.nodes[i].Labels[v1alpha1.LabelSurgeFor]; pair != "" {
			obs.paired[pair] = true // a trace of that rotation, governed or not
		}
	}
	if !obs.Governed() {
		return nil
	}
	var s Stranded
	anchoredNodes := map[string]bool{}
	for i := range obs.Claims {
		c := &obs.Claims[i]
		if anchored[c.Name] {
			anchoredNodes[c.Status.NodeName] = c.Status.NodeName != ""
			continue
		}
		if markers.InFlight(c) {
			s.Claims = append(s.Claims, c)
		}
	}
	sort.SliceStable(s.Claims, func(i, j int) bool { return furtherAlong(s.Claims[i], s.Claims[j]) })
	for _, p := range obs.placeholders {
		if !anchored[p.Labels[v1alpha1.LabelSurgeFor]] {
			s.Placeholders = append(s.Placeholders, p)
		}
	}
	for i := range obs.nodes {
		n := &obs.nodes[i]
		pair := n.Labels[v1alpha1.LabelSurgeFor]
		if !markers.Marked(n) || anchored[pair] || (pair == "" && anchoredNodes[n.Name]) {
			continue
		}
		s.Nodes = append(s.Nodes, n)
	}
	obs.Stranded = s
	return nil
}

// furtherAlong orders stranded claims: draining before pending, then the
// earlier started-at, then the name.
func furtherAlong(a, b *karpv1.NodeClaim) bool {
	sa, sb := a.Annotations[v1alpha1.AnnotationState], b.Annotations[v1alpha1.AnnotationState]
	if sa != sb {
		return sa == v1alpha1.StateDraining
	}
	ta, tb := a.Annotations[v1alpha1.AnnotationStartedAt], b.Annotations[v1alpha1.AnnotationStartedAt]
	if ta != tb {
		return ta < tb
	}
	return a.Name < b.Name
}
