package actions

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/noderotation/node-rotation-controller/engine"
)

// A cache that has not seen an earlier delete issues no second one, and
// says so: the drain is announced once (found on a real cluster: "drain
// started" twice when a pass ran on a cache without the deletionTimestamp).
func TestClaimDeleteOnAStaleCacheIsUnchanged(t *testing.T) {
	c := mkClaim(claimA, nil)
	c.Finalizers = []string{"karpenter.sh/termination"}
	e := newEnv(t, c)
	stale := e.targets() // observed before the first delete
	first, err := step(e.pass(e.targets()), "claim-delete", nil)
	if err != nil || !first.Changed {
		t.Fatalf("first delete: changed %v, %v", first.Changed, err)
	}
	e.resetLog()
	second, err := step(e.pass(stale), "claim-delete", nil)
	if err != nil || second.Changed {
		t.Fatalf("second delete on a stale cache: changed %v (%s), %v", second.Changed, second.Did, err)
	}
}

// A placeholder the cache had not seen is not announced as created again.
func TestPlaceholderEnsureAlreadyExistsIsUnchanged(t *testing.T) {
	e := newEnv(t)
	targets := e.targets()
	targets.Placeholder = nil
	targets.NewPlaceholder = mkPod(phNS, "nrc-surge-"+claimA, "", nil)
	first, err := step(e.pass(targets), "placeholder-ensure", nil)
	if err != nil || !first.Changed {
		t.Fatalf("first create: changed %v, %v", first.Changed, err)
	}
	second, err := step(e.pass(targets), "placeholder-ensure", nil)
	if err != nil || second.Changed {
		t.Fatalf("create on a stale cache: changed %v (%s), %v", second.Changed, second.Did, err)
	}
}

// An announce step with onlyIfChanged speaks only after a step that
// changed something.
func TestAnnounceOnlyIfChanged(t *testing.T) {
	for _, changed := range []bool{true, false} {
		p := &Pass{}
		p.Results = []Result{{Action: "claim-delete", Changed: changed}, {Action: "announce"}}
		d := engine.Decision{Transition: "t", Steps: []engine.Step{{Action: "announce", Args: map[string]any{"what": "DrainStarted", "onlyIfChanged": true}}}}
		ran, err := Run(context.Background(), p, d)
		if err != nil {
			t.Fatal(err)
		}
		if (len(ran.Earned) == 1) != changed {
			t.Errorf("after a step that changed %v: earned %v", changed, ran.Earned)
		}
	}
}

// The expired mirror elects exactly one pass: the one that announces the
// expiry; a second (a racing instance, or a retry after a stop) loses.
func TestExpiredMirrorElectsOnce(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA)))
	first, err := step(e.pass(e.targets()), "pool-mirror", map[string]any{"state": "expired"})
	if err != nil || first.Outcome != Claimed {
		t.Fatalf("first: %s %v", first.Outcome, err)
	}
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, claimA, keyMirror, "expired"))
	second, err := step(e.pass(e.targets()), "pool-mirror", map[string]any{"state": "expired"})
	if err != nil || second.Won() {
		t.Fatalf("second: %s %v, want raced", second.Outcome, err)
	}
	other := newEnv(t, mkPool(poolName, ann(keyAnchor, "claim-other")))
	if res, _ := step(other.pass(other.targets()), "pool-mirror", map[string]any{"state": "expired"}); res.Won() {
		t.Fatal("an expiry recorded for a rotation the anchor does not name")
	}
}

// The draining mirror records the surge node once, at surge-ready.
func TestDrainingMirrorRecordsTheSurgeNode(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA)), mkNode(hostNode, nil, nil, false))
	targets := e.targets()
	targets.SurgeHost = e.node(hostNode)
	if _, err := step(e.pass(targets), "pool-mirror", map[string]any{"surgeNode": true}); err != nil {
		t.Fatal(err)
	}
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, claimA, keyMirror, "draining", "noderotation.io/surge-node", hostNode))
	targets.SurgeHost.ObjectMeta = metav1.ObjectMeta{Name: "another"}
	if _, err := step(e.pass(targets), "pool-mirror", map[string]any{"surgeNode": true}); err != nil {
		t.Fatal(err)
	}
	if got := e.pool(poolName).Annotations["noderotation.io/surge-node"]; got != hostNode {
		t.Errorf("surge-node rewritten to %q: it is write-once", got)
	}
}

// A release that finds the expiry recorded on the fresh pool clears the
// anchor as "recorded": the pass that recorded it announced it.
func TestAnchorReleaseOfARecordedExpiry(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "expired")))
	res, err := step(e.pass(e.targets()), "anchor-release", nil)
	if err != nil || res.Outcome != Claimed || res.Released == nil || res.Released.Outcome != ReleasedRecorded {
		t.Fatalf("%s %v released %+v, want claimed and recorded", res.Outcome, err, res.Released)
	}
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, "", keyMirror, "", keyLastRot, ""))
}

// The draining mirror never turns a recorded expiry back into a drain.
func TestDrainingMirrorRefusesARecordedExpiry(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "expired")))
	res, err := step(e.pass(e.targets()), "pool-mirror", map[string]any{"drainingAt": true})
	if err != nil || res.Won() {
		t.Fatalf("%s %v, want raced", res.Outcome, err)
	}
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyMirror, "expired", keyDraining, ""))
}

// With notDeleting, a claim whose delete was issued is never rolled back.
func TestClaimStateNotDeleting(t *testing.T) {
	c := mkClaim(claimA, ann(keyState, "draining"))
	c.Finalizers = []string{"karpenter.sh/termination"}
	e := newEnv(t, c)
	if err := e.base.Delete(ctxb, c); err != nil {
		t.Fatal(err)
	}
	res, err := step(e.pass(e.targets()), "claim-state", map[string]any{"from": []any{"none", "draining"}, "to": "none", "notDeleting": true})
	if err != nil || res.Won() {
		t.Fatalf("%s %v, want raced", res.Outcome, err)
	}
	if got := e.claim(claimA).Annotations[keyState]; got != "draining" {
		t.Errorf("state %q", got)
	}
}

// An orphan release refuses a fresh pool with a mirror: the cache missed a
// live rotation's record.
func TestAnchorClearIfNoMirror(t *testing.T) {
	for mirror, won := range map[string]bool{"": true, "pending": false, "expired": false} {
		e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, mirror)))
		res, err := step(e.pass(e.targets()), "anchor-clear", map[string]any{"ifNoMirror": true})
		if err != nil || res.Won() != won {
			t.Errorf("mirror %q: %s %v, want won %v", mirror, res.Outcome, err, won)
		}
	}
}
