package actions

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// An electing write whose change is already in place on the pass's copy
// sends nothing, so on its own it proves nothing: the copy may be a cache
// that has not yet seen another pass's write. The locked writes after it
// are safe regardless — each meets its own object's resourceVersion — but
// an effect no resourceVersion guards (a create, a delete, an unlocked
// patch) must not run on an election the server never
// saw. Before such an effect the pass confirms the election with a patch
// that carries only the copy's resourceVersion: a no-op the API server
// does not persist when the copy is current, a conflict (stale) when it is
// not (docs/design.md#cache-based-writes).

// noteElection records, after a claimed write, whether the election it
// made (when the step elects) still needs the server's confirmation.
func (p *Pass) noteElection(obj client.Object, rvBefore string) {
	k, ok := keyOf(obj)
	if !ok {
		return
	}
	if obj.GetResourceVersion() != rvBefore {
		p.confirmedKeys()[k] = true // the server answered this write
		return
	}
	if p.electing && !p.confirmedKeys()[k] {
		p.unconfirmed = obj.DeepCopyObject().(client.Object)
	}
}

func (p *Pass) confirmedKeys() map[copyKey]bool {
	if p.confirmed == nil {
		p.confirmed = map[copyKey]bool{}
	}
	return p.confirmed
}

// confirmElection makes sure the pass's election was seen by the server
// before an unguarded effect; false means the pass is stale and must stop.
func (p *Pass) confirmElection(ctx context.Context) (bool, error) {
	if p.stale {
		return false, nil
	}
	u := p.unconfirmed
	if u == nil {
		return true, nil
	}
	orig := u.DeepCopyObject().(client.Object)
	err := p.Client.Patch(ctx, u, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		p.unconfirmed = nil
		p.hold(u)
		k, _ := keyOf(u)
		p.confirmedKeys()[k] = true
		return true, nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		p.stale = true
		return false, nil
	}
	return false, fmt.Errorf("confirming the election on %s: %w", client.ObjectKeyFromObject(u), err)
}

// unconfirmedResult is what an effect reports when its pass turned out stale.
func unconfirmedResult(what string) Result {
	return Result{Outcome: Stale, Did: what + ": not done, the election was stale"}
}
