package actions

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// A pass writes from the copies it observed, not from fresh reads
// (docs/design.md#cache-based-writes): each conditional write decides on the
// newest copy the pass holds of its target and patches with that copy's
// resourceVersion. The newest copy is what the pass's own last write of the
// object returned, else what it observed — so a second write of the same
// object in one pass (the window stamp, then the anchor) locks on the
// resourceVersion the first produced, not on the observation it replaced.

// copyKey names a target: its kind and name (every target a pass writes
// conditionally is cluster-scoped).
type copyKey struct{ kind, name string }

func keyOf(obj client.Object) (copyKey, bool) {
	switch obj.(type) {
	case *karpv1.NodePool:
		return copyKey{"NodePool", obj.GetName()}, true
	case *karpv1.NodeClaim:
		return copyKey{"NodeClaim", obj.GetName()}, true
	case *corev1.Node:
		return copyKey{"Node", obj.GetName()}, true
	}
	return copyKey{}, false
}

// copies indexes what the pass observed, once.
func (p *Pass) copies() map[copyKey]client.Object {
	if p.held != nil {
		return p.held
	}
	p.held = map[copyKey]client.Object{}
	p.index(p.Targets)
	return p.held
}

// index adds the objects t was observed with that the pass holds no copy
// of yet.
func (p *Pass) index(t Targets) {
	var observed []client.Object
	for _, c := range append([]*karpv1.NodeClaim{t.ClaimObject, t.SurgeHostClaim, t.InducedClaim}, t.Stranded.Claims...) {
		if c != nil {
			observed = append(observed, c)
		}
	}
	for _, n := range append([]*corev1.Node{t.OldNode, t.SurgeHost}, t.Stranded.Nodes...) {
		if n != nil {
			observed = append(observed, n)
		}
	}
	if t.Pool != nil {
		observed = append(observed, t.Pool)
	}
	for _, o := range observed {
		if k, ok := keyOf(o); ok && p.held[k] == nil {
			p.held[k] = o
		}
	}
}

// Retarget points the pass's next steps at another rotation slot's
// targets (docs/design.md#throughput). What the pass holds stays: an
// object it already observed or wrote keeps its newest copy — the pool's
// above all, which every slot writes — and the new targets' objects it
// holds no copy of are added. The elections the previous slot's steps left
// unconfirmed are dropped: they guard that slot's effects, which are
// behind it, and nothing the next slot does depends on them — confirming
// them before its writes cost a no-op patch of another rotation's claim
// per slot and pass.
func (p *Pass) Retarget(t Targets) {
	p.unconfirmed = nil
	p.copies()
	p.Targets = t
	p.index(t)
}

// hold records obj — the response of a write this pass made — as the newest
// copy of its object.
func (p *Pass) hold(obj client.Object) {
	if k, ok := keyOf(obj); ok && obj.GetResourceVersion() != "" {
		p.copies()[k] = obj.DeepCopyObject().(client.Object)
		if p.wrote == nil {
			p.wrote = map[copyKey]string{}
		}
		p.wrote[k] = obj.GetResourceVersion()
	}
}

// Written is an object a pass wrote and the resourceVersion the API
// server answered with.
type Written struct{ Kind, Name, ResourceVersion string }

// Wrote lists the pool, claims and nodes this pass wrote, each with the
// resourceVersion of its last write: a later pass must not decide on a
// cached copy older than that (docs/design.md#read-your-writes).
func (p *Pass) Wrote() []Written {
	out := make([]Written, 0, len(p.wrote))
	for k, rv := range p.wrote {
		out = append(out, Written{Kind: k.kind, Name: k.name, ResourceVersion: rv})
	}
	return out
}

// newest returns a private copy of the newest copy the pass holds of the
// object empty names, or empty itself — without a resourceVersion, so its
// write validates on a fresh read — when the pass never observed it.
func newest[T client.Object](p *Pass, empty T) T {
	k, _ := keyOf(empty)
	if held, ok := p.copies()[k]; ok {
		if c, ok := held.DeepCopyObject().(T); ok {
			return c
		}
	}
	return empty
}

func (p *Pass) pool() *karpv1.NodePool {
	return newest(p, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p.Targets.Pool.Name}})
}

func (p *Pass) claim(name string) *karpv1.NodeClaim {
	return newest(p, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

func (p *Pass) node(name string) *corev1.Node {
	return newest(p, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// PoolResourceVersion is the resourceVersion of the newest copy the pass
// holds of its pool: another than the observed one once a step of the
// pass wrote the pool.
func (p *Pass) PoolResourceVersion() string {
	if np, ok := p.copies()[copyKey{"NodePool", p.Targets.Pool.Name}]; ok {
		return np.GetResourceVersion()
	}
	return ""
}
