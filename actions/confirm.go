package actions

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// An electing write whose change is already in place on the pass's copy
// sends nothing, so on its own it proves nothing: the copy may be a cache
// that has not yet seen another pass's write (a pending rotation's passes
// all re-assert state=pending). Before the pass sends anything the
// election's object does not lock — a patch of another object, a create,
// a delete, an unlocked patch — it confirms the election with a patch that
// carries only the copy's resourceVersion: a no-op the API server does not
// persist when the copy is current, a conflict (stale) when it is not
// (docs/design.md#cache-based-writes). A write of the election's own object
// needs no confirmation: its resourceVersion lock is one.

// noteElection records, after a claimed write, whether the election it
// made (when the step elects) still needs the server's confirmation.
func (p *Pass) noteElection(obj client.Object, rvBefore string) {
	k, ok := keyOf(obj)
	if !ok {
		return
	}
	if obj.GetResourceVersion() != rvBefore {
		// the server answered this write: its lock confirmed any election
		// made on this object
		p.confirmedKeys()[k] = true
		delete(p.unconfirmed, k)
		return
	}
	if p.electing && !p.confirmedKeys()[k] {
		if p.unconfirmed == nil {
			p.unconfirmed = map[copyKey]client.Object{}
		}
		p.unconfirmed[k] = obj.DeepCopyObject().(client.Object)
	}
}

func (p *Pass) confirmedKeys() map[copyKey]bool {
	if p.confirmed == nil {
		p.confirmed = map[copyKey]bool{}
	}
	return p.confirmed
}

// confirmElectionBefore confirms the pass's elections before a patch of
// obj, except one made on obj itself (the patch's own lock confirms it).
func (p *Pass) confirmElectionBefore(ctx context.Context, obj client.Object) (bool, error) {
	own, _ := keyOf(obj)
	return p.confirm(ctx, own)
}

// confirmElection makes sure every election of the pass was seen by the
// server before an unguarded effect; false means the pass is stale and
// must stop.
func (p *Pass) confirmElection(ctx context.Context) (bool, error) {
	return p.confirm(ctx, copyKey{})
}

func (p *Pass) confirm(ctx context.Context, except copyKey) (bool, error) {
	if p.stale {
		return false, nil
	}
	for k, u := range p.unconfirmed {
		if k == except {
			continue
		}
		orig := u.DeepCopyObject().(client.Object)
		err := p.Client.Patch(ctx, u, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		switch {
		case err == nil:
			delete(p.unconfirmed, k)
			p.hold(u)
			p.confirmedKeys()[k] = true
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
			p.stale = true
			return false, nil
		default:
			return false, fmt.Errorf("confirming the election on %s: %w", client.ObjectKeyFromObject(u), err)
		}
	}
	return true, nil
}

// unconfirmedResult is what an effect reports when its pass turned out stale.
func unconfirmedResult(what string) Result {
	return Result{Outcome: Stale, Did: what + ": not done, the election was stale"}
}
