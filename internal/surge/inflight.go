package surge

import (
	"sort"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// InFlight names the claims of a pool that are surge claims of its
// rotations in flight: the claims a percentage of the pool leaves out of
// its base, so the number of rotations in force does not grow with the
// surge nodes of the rotations it bounds (docs/design.md#percentage-base).
//
// anchors are the claims the pool's slots name; pairs maps a node of the
// pool to the anchor it serves (its surge-for marker — which the old
// node, frozen, carries too — or the placeholder bound to it), nil when
// the caller has not read them. For each anchor
// still in the pool, in the order its rotation started, its surge host's
// claim is the first of: the claim its surge-claim annotation names, the
// claim of a node paired with it, the oldest claim created since the
// rotation started that no node pairs with a rotation and no other
// rotation took — Karpenter's launch for its placeholder, which has no
// node yet, or whose node the placeholder is not bound to yet. That claim
// is a surge claim only when it was created since the rotation's
// started-at: a host that predates it was absorbed, not induced, and
// belongs to the pool. Each claim is one rotation's at most. Where the
// evidence is short (no pairs; a scale-up's claim created meanwhile) the
// last rule takes a claim that may be the pool's own: the base errs low,
// never high.
func InFlight(anchors []string, claims []karpv1.NodeClaim, pairs map[string]string) map[string]bool {
	byName := make(map[string]*karpv1.NodeClaim, len(claims))
	for i := range claims {
		byName[claims[i].Name] = &claims[i]
	}
	type rotation struct {
		claim   *karpv1.NodeClaim
		started time.Time
	}
	var live []rotation
	anchored := map[string]bool{}
	for _, a := range anchors {
		c, ok := byName[a]
		if !ok || anchored[a] {
			continue // gone: its surge node is the pool's now
		}
		anchored[a] = true
		if started, err := time.Parse(time.RFC3339, c.Annotations[v1alpha1.AnnotationStartedAt]); err == nil {
			live = append(live, rotation{c, started})
		}
	}
	sort.SliceStable(live, func(i, j int) bool { return live[i].started.Before(live[j].started) })
	out, served := map[string]bool{}, map[string]bool{}
	// settle gives rotation r its surge host's claim k: a surge claim when
	// k was created since r started, absorbed (the pool's own) otherwise.
	// An anchored claim is never a host: the old node carries the
	// surge-for marker of its own rotation too (it is frozen with it).
	settle := func(r rotation, k *karpv1.NodeClaim) {
		if k == nil || served[r.claim.Name] || anchored[k.Name] {
			return
		}
		served[r.claim.Name] = true
		if !out[k.Name] && CreatedSince(k, r.started) {
			out[k.Name] = true
		}
	}
	for _, r := range live {
		settle(r, byName[r.claim.Annotations[v1alpha1.AnnotationSurgeClaim]])
	}
	byAnchor := make(map[string]rotation, len(live))
	for _, r := range live {
		byAnchor[r.claim.Name] = r
	}
	for i := range claims {
		if k := &claims[i]; k.Status.NodeName != "" {
			if r, ok := byAnchor[pairs[k.Status.NodeName]]; ok {
				settle(r, k)
			}
		}
	}
	// the rest, oldest first, to the rotations started first: a claim no
	// node pairs with any rotation, created since the rotation started
	var unpaired []*karpv1.NodeClaim
	for i := range claims {
		if k := &claims[i]; !anchored[k.Name] && !out[k.Name] && (k.Status.NodeName == "" || pairs[k.Status.NodeName] == "") {
			unpaired = append(unpaired, k)
		}
	}
	sort.SliceStable(unpaired, func(i, j int) bool {
		ti, tj := unpaired[i].CreationTimestamp.Time, unpaired[j].CreationTimestamp.Time
		return ti.Before(tj) || (ti.Equal(tj) && unpaired[i].Name < unpaired[j].Name)
	})
	for _, r := range live {
		for _, k := range unpaired {
			if !served[r.claim.Name] && !out[k.Name] && CreatedSince(k, r.started) {
				settle(r, k)
			}
		}
	}
	return out
}
