package actions

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// repairStrandedWorld: the pool's anchor names claim-a; claim-b was left
// pending by an overwritten anchor, with its placeholder and a frozen,
// cordoned old node; claim-a's own node must not be touched.
func repairStrandedWorld(t *testing.T, anchor string) (*env, Targets) {
	e := newEnv(t,
		mkPool(poolName, ann(keyAnchor, anchor)),
		mkClaim("claim-b", ann(keyState, "pending", keyStarted, "2026-11-30T09:00:00Z", keyRetry, "1")),
		mkPod(phNS, "nrc-surge-claim-b", "", map[string]string{labelPair: "claim-b"}),
		mkNode("node-b", map[string]string{labelPair: "claim-b"}, ann(keyDND, "true", keyOwned, "true", keyCordoned, "true"), true),
		mkNode("node-a", map[string]string{labelPair: claimA}, ann(keyDND, "true", keyOwned, "true"), false),
	)
	targets := e.targets()
	targets.Stranded = Stranded{
		Claims:       []*karpv1.NodeClaim{e.claim("claim-b")},
		Placeholders: []*corev1.Pod{getPod(t, e, phNS, "nrc-surge-claim-b")},
		Nodes:        []*corev1.Node{e.node("node-b"), e.node("node-a")},
	}
	return e, targets
}

func TestRepairStranded(t *testing.T) {
	e, targets := repairStrandedWorld(t, claimA)
	res, err := step(e.pass(targets), "repair-stranded", nil)
	if err != nil || !res.Changed {
		t.Fatalf("changed %v, %v", res.Changed, err)
	}
	wantAnn(t, "claim-b", e.claim("claim-b").Annotations, ann(keyState, "failed", keyFailed, nowStamp, keyRetry, "2", keyStarted, ""))
	if e.exists(mkPod(phNS, "nrc-surge-claim-b", "", nil)) {
		t.Error("the stranded placeholder survived")
	}
	b := e.node("node-b")
	wantAnn(t, "node-b", b.Annotations, ann(keyDND, "", keyOwned, "", keyCordoned, ""))
	if b.Spec.Unschedulable || b.Labels[labelPair] != "" {
		t.Error("node-b is still cordoned or paired")
	}
	a := e.node("node-a")
	if a.Labels[labelPair] != claimA || a.Annotations[keyOwned] != "true" {
		t.Error("the anchored rotation's node was touched")
	}
	if !slices.Equal(res.FailedClaims, []string{"claim-b"}) || res.Repaired != res.Did {
		t.Errorf("failed %q, repaired %q: want [claim-b] and what it did", res.FailedClaims, res.Repaired)
	}
	// twice: nothing left to do, nothing to announce
	e.resetLog()
	again, err := step(e.pass(targets), "repair-stranded", nil)
	if err != nil || again.Changed {
		t.Fatalf("second run: changed %v (%s), %v", again.Changed, again.Did, err)
	}
}

// The fresh anchor wins over the cache: a claim the pool's anchor names by
// now is the live rotation's, never repaired.
func TestRepairStrandedRespectsTheFreshAnchor(t *testing.T) {
	e, targets := repairStrandedWorld(t, "claim-b")     // the store already names claim-b
	targets.Stranded.Nodes = targets.Stranded.Nodes[:1] // claim-b's node only
	res, err := step(e.pass(targets), "repair-stranded", nil)
	if err != nil || res.Changed {
		t.Fatalf("changed %v (%s), %v", res.Changed, res.Did, err)
	}
	if got := e.claim("claim-b").Annotations[keyState]; got != "pending" {
		t.Errorf("the live rotation's claim was failed: state %q", got)
	}
	if !e.exists(mkPod(phNS, "nrc-surge-claim-b", "", nil)) {
		t.Error("the live rotation's placeholder was deleted")
	}
	if e.node("node-b").Labels[labelPair] != "claim-b" {
		t.Error("the live rotation's node was unfrozen")
	}
}

func TestReadopt(t *testing.T) {
	for _, tc := range []struct {
		state, wantMirror string
		won               bool
	}{
		{"pending", "pending", true},
		{"draining", "draining", true},
		{"failed", "", false}, // a rollback the cache had not seen: never re-adopted
	} {
		e := newEnv(t, mkPool(poolName, nil), mkClaim(claimA, ann(keyState, tc.state)))
		res, err := step(e.pass(e.targets()), "anchor-write", map[string]any{"mode": "readopt"})
		if err != nil || res.Won() != tc.won {
			t.Fatalf("%s: %s %v, want won %v", tc.state, res.Outcome, err, tc.won)
		}
		want := ann(keyAnchor, "", keyMirror, "")
		if tc.won {
			want = ann(keyAnchor, claimA, keyMirror, tc.wantMirror)
		}
		wantAnn(t, tc.state, e.pool(poolName).Annotations, want)
	}
	// only the anchor of a drain held after governance loss was removed:
	// its record stays, so its end is still no success
	e := newEnv(t, mkPool(poolName, ann(keyMirror, "governance-lost")), mkClaim(claimA, ann(keyState, "draining")))
	if res, err := step(e.pass(e.targets()), "anchor-write", map[string]any{"mode": "readopt"}); err != nil || !res.Won() {
		t.Fatalf("held drain: %s %v", res.Outcome, err)
	}
	wantAnn(t, "held drain", e.pool(poolName).Annotations, ann(keyAnchor, claimA, keyMirror, "governance-lost"))
	// an anchor written meanwhile wins
	e = newEnv(t, mkPool(poolName, ann(keyAnchor, "other")), mkClaim(claimA, ann(keyState, "pending")))
	if res, _ := step(e.pass(e.targets()), "anchor-write", map[string]any{"mode": "readopt"}); res.Won() {
		t.Error("re-adopted over another anchor")
	}
}

func getPod(t *testing.T, e *env, ns, name string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{}
	if err := e.base.Get(ctxb, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
		t.Fatal(err)
	}
	return p
}

// A stranded claim whose delete was issued is draining: never failed (the
// gate would open mid-drain), it holds the pool until it is gone.
func TestRepairStrandedHoldsADeletingClaim(t *testing.T) {
	c := mkClaim("claim-b", ann(keyState, "draining"))
	c.Finalizers = []string{"karpenter.sh/termination"}
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA)), c)
	if err := e.base.Delete(ctxb, c); err != nil {
		t.Fatal(err)
	}
	targets := e.targets()
	targets.Stranded = Stranded{Claims: []*karpv1.NodeClaim{e.claim("claim-b")}}
	res, err := step(e.pass(targets), "repair-stranded", nil)
	if err != nil || res.Changed {
		t.Fatalf("changed %v (%s), %v", res.Changed, res.Did, err)
	}
	if got := e.claim("claim-b").Annotations[keyState]; got != "draining" {
		t.Errorf("a draining claim was failed: state %q", got)
	}
}

// An anchor naming a gone claim beside a live rotation is replaced by that
// rotation's claim in one write, only while it still names the gone one and
// a fresh read shows the claim in flight; the gone rotation's figures go
// with it, a held drain's governance-lost record stays. When the live
// rotation ended meanwhile, the stale anchor is released all the same.
func TestSupersede(t *testing.T) {
	const gone = "claim-gone"
	for _, tc := range []struct {
		name, anchor, mirror, state string // state "": the claim does not exist
		won                         bool
		anchored                    string
		want                        map[string]string
	}{
		{"a pending rotation", gone, "draining", "pending", true, claimA, ann(keyAnchor, claimA, keyMirror, "pending", keyDraining, "")},
		{"a draining rotation", gone, "draining", "draining", true, claimA, ann(keyAnchor, claimA, keyMirror, "draining", keyDraining, "")},
		{"a drain held after governance loss", gone, "governance-lost", "draining", true, claimA, ann(keyAnchor, claimA, keyMirror, "governance-lost", keyDraining, "")},
		{"rolled back meanwhile: released", gone, "draining", "failed", true, "", ann(keyAnchor, "", keyMirror, "", keyDraining, "")},
		{"finished meanwhile: released", gone, "draining", "", true, "", ann(keyAnchor, "", keyMirror, "", keyDraining, "")},
		{"the anchor moved on", "other", "draining", "pending", false, "", ann(keyAnchor, "other", keyMirror, "draining", keyDraining, "x")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{mkPool(poolName, ann(keyAnchor, tc.anchor, keyMirror, tc.mirror, keyDraining, "x"))}
			if tc.state != "" {
				objs = append(objs, mkClaim(claimA, ann(keyState, tc.state)))
			}
			e := newEnv(t, objs...)
			targets := e.targets()
			targets.Claim, targets.ClaimObject = gone, nil
			// the pass's cached copy still shows the claim pending: only the
			// fresh read tells what it is now
			targets.Stranded.Claims = []*karpv1.NodeClaim{mkClaim(claimA, ann(keyState, "pending"))}
			res, err := step(e.pass(targets), "anchor-write", map[string]any{"mode": "supersede"})
			if err != nil || res.Won() != tc.won {
				t.Fatalf("%s %v, want won %v", res.Outcome, err, tc.won)
			}
			wantAnn(t, "pool", e.pool(poolName).Annotations, tc.want)
			if tc.won && (res.Superseded != gone || res.Anchored != tc.anchored) {
				t.Errorf("result %+v, want %s superseded, %q anchored", res, gone, tc.anchored)
			}
		})
	}
	t.Run("no stranded claim", func(t *testing.T) {
		e := newEnv(t, mkPool(poolName, ann(keyAnchor, gone)))
		targets := e.targets()
		targets.Claim = gone
		if res, _ := step(e.pass(targets), "anchor-write", map[string]any{"mode": "supersede"}); res.Won() {
			t.Error("superseded with nothing to anchor")
		}
	})
}
