package rotation_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// anchorWatch sees every write to every NodePool of a world, for the whole
// suite, and records each time a pool's anchor changed from one claim
// straight to another (docs/operations.md "Races and crashes": the anchor
// only ever changes between empty and one claim). After every spec,
// expectNoMoves fails the spec if one of its pools' anchors moved.
type anchorWatch struct {
	mu sync.Mutex
	// anchor is the last anchor seen per pool and slot
	// (docs/design.md#throughput): each slot's anchor only ever changes
	// between empty and one claim.
	anchor  map[string]map[v1alpha1.Slot]string
	most    map[string]int  // the most slots seen anchored at once, per pool
	deleted map[string]bool // pools whose deletion the watch delivered
	moves   []string
	// overwrites are anchor moves a spec expects, in order (pool → the
	// claims the anchor moves to): its own overwrite, as an operator's
	// replace of an older copy would make, and the controller's
	// gone.superseded, which puts a live rotation in the place of an
	// anchor naming a gone claim. Any other move is held against the
	// controller.
	overwrites map[string][]string
	cancel     context.CancelFunc
	done       chan struct{}
}

func watchAnchors(c client.WithWatch) (*anchorWatch, error) {
	wctx, cancel := context.WithCancel(context.Background())
	a := &anchorWatch{anchor: map[string]map[v1alpha1.Slot]string{}, most: map[string]int{}, deleted: map[string]bool{}, cancel: cancel, done: make(chan struct{})}
	list := &karpv1.NodePoolList{}
	if err := c.List(wctx, list); err != nil {
		cancel()
		return nil, err
	}
	for _, p := range list.Items {
		a.anchor[p.Name] = slotAnchors(&p)
	}
	w, err := c.Watch(wctx, &karpv1.NodePoolList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		cancel()
		return nil, err
	}
	go a.run(wctx, c, w, list.ResourceVersion)
	return a, nil
}

// run consumes the watch; when the server ends it, it resumes from the last
// resourceVersion seen, so no write is missed. A watch error (e.g. history
// compacted) is recorded as a failure — writes may have been missed — and
// the watch restarts from a fresh list.
func (a *anchorWatch) run(wctx context.Context, c client.WithWatch, w watch.Interface, rv string) {
	defer close(a.done)
	for {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				a.fail(fmt.Sprintf("the NodePool watch failed after resourceVersion %s: %v", rv, apierrors.FromObject(ev.Object)))
				rv = ""
				continue
			}
			if np, ok := ev.Object.(*karpv1.NodePool); ok {
				rv = np.ResourceVersion
				a.see(ev.Type, np)
			}
		}
		for wctx.Err() == nil {
			if rv == "" {
				list := &karpv1.NodePoolList{}
				if err := c.List(wctx, list); err != nil {
					select { // the API server is stopping, or busy: retry
					case <-wctx.Done():
					case <-time.After(200 * time.Millisecond):
					}
					continue
				}
				for i := range list.Items {
					a.see(watch.Modified, &list.Items[i])
				}
				rv = list.ResourceVersion
			}
			var err error
			if w, err = c.Watch(wctx, &karpv1.NodePoolList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}}); err == nil {
				break
			}
			if wctx.Err() == nil {
				a.fail(fmt.Sprintf("the NodePool watch could not resume from resourceVersion %s: %v", rv, err))
				rv = ""
			}
		}
		if wctx.Err() != nil {
			return
		}
	}
}

func (a *anchorWatch) see(typ watch.EventType, np *karpv1.NodePool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if typ == watch.Deleted {
		delete(a.anchor, np.Name)
		a.deleted[np.Name] = true
		return
	}
	delete(a.deleted, np.Name)
	cur := slotAnchors(np)
	prev := a.anchor[np.Name]
	slots := map[v1alpha1.Slot]bool{}
	for s := range prev {
		slots[s] = true
	}
	for s := range cur {
		slots[s] = true
	}
	for s := range slots {
		p, c := prev[s], cur[s]
		if want := a.overwrites[np.Name]; p != "" && c != "" && p != c && len(want) > 0 && want[0] == c {
			a.overwrites[np.Name] = want[1:]
		} else if p != "" && c != "" && p != c {
			a.moves = append(a.moves, fmt.Sprintf("NodePool %s: slot %d's anchor moved from %s to %s (resourceVersion %s)", np.Name, s, p, c, np.ResourceVersion))
		}
	}
	named := map[string]v1alpha1.Slot{}
	for s, c := range cur {
		if other, ok := named[c]; ok {
			a.moves = append(a.moves, fmt.Sprintf("NodePool %s: slots %d and %d both name %s (resourceVersion %s)", np.Name, other, s, c, np.ResourceVersion))
		}
		named[c] = s
	}
	a.most[np.Name] = max(a.most[np.Name], len(cur))
	a.anchor[np.Name] = cur
}

// slotAnchors is the claim each anchored slot of np names.
func slotAnchors(np *karpv1.NodePool) map[v1alpha1.Slot]string {
	out := map[v1alpha1.Slot]string{}
	for _, an := range v1alpha1.Anchors(np.Annotations) {
		out[an.Slot] = an.Claim
	}
	return out
}

// mostAnchored is the most slots the watch has seen anchored at once on
// pool.
func (a *anchorWatch) mostAnchored(pool string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.most[pool]
}

// expectOverwrite tells the watch that pool's anchor is about to move to
// each of claims in turn: by the spec itself (as an operator's replace of
// an older copy would), then by the controller superseding that value.
func (a *anchorWatch) expectOverwrite(pool string, claims ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.overwrites == nil {
		a.overwrites = map[string][]string{}
	}
	a.overwrites[pool] = claims
}

func (a *anchorWatch) fail(msg string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.moves = append(a.moves, msg)
}

// expectNoMoves waits until the watch has delivered the deletion of pools
// (so every earlier write to them has been seen), then fails if any anchor
// moved since the last check.
func (a *anchorWatch) expectNoMoves(pools []string) {
	Eventually(func() []string {
		a.mu.Lock()
		defer a.mu.Unlock()
		var pending []string
		for _, p := range pools {
			if !a.deleted[p] {
				pending = append(pending, p)
			}
		}
		return pending
	}, timeout).Should(BeEmpty(), "the anchor watch has seen every pool of the spec deleted")
	a.mu.Lock()
	moves := a.moves
	a.moves = nil
	a.mu.Unlock()
	Expect(moves).To(BeEmpty(), "an anchor moved from one claim to another without a release, or the watch lost writes")
}

func (a *anchorWatch) stop() {
	a.cancel()
	<-a.done
}
