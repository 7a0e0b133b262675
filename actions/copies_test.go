package actions

import (
	"errors"
	"slices"
	"testing"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/engine"
)

// A second write of one object in one pass locks on the resourceVersion the
// first write returned, not on the observation: no read, no conflict.
func TestSecondWriteOfAnObjectLocksOnTheFirstsResponse(t *testing.T) {
	e := newEnv(t, mkPool(poolName, nil), mkClaim(claimA, nil))
	p := e.pass(e.targets())
	d := engine.Decision{Transition: "test", Steps: []engine.Step{
		{Action: "window-stamp"},
		{Action: "anchor-write", Elect: true, Args: map[string]any{"mode": "surge"}},
	}}
	ran, err := Run(ctxb, p, d)
	if err != nil || !ran.Owned {
		t.Fatalf("ran %+v err %v", ran, err)
	}
	if e.gets != 0 || len(e.bodies) != 2 {
		t.Fatalf("%d reads, patches %v; want 0 reads, 2 patches", e.gets, e.bodies)
	}
	if got := e.pool(poolName).Annotations; got[keyAnchor] != claimA || got[keyWindow] != nowStamp {
		t.Fatalf("pool annotations %v", got)
	}
}

// An electing write that changes nothing on the pass's copy is confirmed
// with a lock-only patch before an effect no resourceVersion guards (here
// the placeholder's create); on a current copy the effect runs.
func TestNoOpElectionIsConfirmedBeforeAnUnguardedEffect(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "pending")), mkClaim(claimA, ann(keyState, "pending", keyStarted, "2026-11-30T09:00:00Z")))
	targets := e.targets()
	targets.NewPlaceholder = newPlaceholder()
	ran, err := Run(ctxb, e.pass(targets), pendingCreate())
	if err != nil || !ran.Owned {
		t.Fatalf("ran %+v err %v", ran, err)
	}
	want := []string{"patch NodeClaim/" + claimA, "create Pod/" + phNS + "/ph-" + claimA}
	if !slices.Equal(e.writes, want) {
		t.Fatalf("writes %v, want %v", e.writes, want)
	}
	if e.bodies[0] != `{"metadata":{"resourceVersion":"999"}}` {
		t.Fatalf("confirmation %s", e.bodies[0])
	}
}

// The same pass on a copy another writer has moved past (the claim was
// rolled back): the confirmation is refused and nothing is created.
func TestStaleNoOpElectionCreatesNothing(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "pending")), mkClaim(claimA, ann(keyState, "pending", keyStarted, "2026-11-30T09:00:00Z")))
	targets := e.targets()
	targets.NewPlaceholder = newPlaceholder()
	update(t, e.base, mkClaim(claimA, nil), func(c *karpv1.NodeClaim) { c.Annotations[keyState] = "failed" })
	ran, err := Run(ctxb, e.pass(targets), pendingCreate())
	if !errors.Is(err, ErrStale) || ran.Owned {
		t.Fatalf("ran %+v err %v, want stale", ran, err)
	}
	if !slices.Equal(e.writes, []string{"patch NodeClaim/" + claimA}) {
		t.Fatalf("writes %v, want only the refused confirmation", e.writes)
	}
	if e.exists(newPlaceholder()) || e.claim(claimA).Annotations[keyState] != "failed" {
		t.Fatal("a stale pass created a placeholder or undid the rollback")
	}
}

// An election that wrote needs no confirmation: the server answered it.
func TestWrittenElectionNeedsNoConfirmation(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "pending")), mkClaim(claimA, nil))
	targets := e.targets()
	targets.NewPlaceholder = newPlaceholder()
	if ran, err := Run(ctxb, e.pass(targets), pendingCreate()); err != nil || !ran.Owned {
		t.Fatalf("ran %+v err %v", ran, err)
	}
	if len(e.writes) != 2 || e.writes[1] != "create Pod/"+phNS+"/ph-"+claimA {
		t.Fatalf("writes %v, want the claim's write and the create", e.writes)
	}
}

// A stale write stops the pass: no later step runs, and Run says why.
func TestStaleWriteStopsThePass(t *testing.T) {
	e := newEnv(t, mkPool(poolName, nil), mkClaim(claimA, nil))
	targets := e.targets()
	update(t, e.base, mkPool(poolName, nil), func(np *karpv1.NodePool) { np.Labels = map[string]string{"touched": "yes"} })
	d := engine.Decision{Transition: "test", Steps: []engine.Step{
		{Action: "window-stamp"},
		{Action: "claim-state", Args: map[string]any{"to": "pending"}},
	}}
	p := e.pass(targets)
	if _, err := Run(ctxb, p, d); !errors.Is(err, ErrStale) {
		t.Fatalf("err %v, want stale", err)
	}
	if len(p.Results) != 1 || e.claim(claimA).Annotations[keyState] != "" {
		t.Fatalf("results %+v: a step ran after the stale write", p.Results)
	}
	// and a later write in the same pass sends nothing
	c := p.claim(claimA)
	if out, err := p.write(ctxb, c, func() (bool, error) { return true, nil }); out != Stale || err != nil {
		t.Fatalf("write after stale: %s %v", out, err)
	}
}

func pendingCreate() engine.Decision {
	return engine.Decision{Transition: "test", Steps: []engine.Step{
		{Action: "claim-state", Elect: true, Args: map[string]any{"from": []any{"none", "pending"}, "to": "pending", "stampStartedAtOnce": true}},
		{Action: "placeholder-ensure"},
	}}
}

// A no-op election is confirmed before a patch of another object too: a
// pass whose cache still shows a rolled-back claim pending neither freezes
// nor cordons its node.
func TestStaleNoOpElectionPatchesNoOtherObject(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "pending")),
		mkClaim(claimA, ann(keyState, "pending", keyStarted, "2026-11-30T09:00:00Z")),
		mkNode(oldNode, nil, nil, false))
	targets := e.targets()
	update(t, e.base, mkClaim(claimA, nil), func(c *karpv1.NodeClaim) { c.Annotations[keyState] = "failed" })
	before := e.node(oldNode)
	d := engine.Decision{Transition: "test", Steps: []engine.Step{
		{Action: "claim-state", Elect: true, Args: map[string]any{"from": []any{"none", "pending"}, "to": "pending", "stampStartedAtOnce": true}},
		{Action: "freeze", Args: map[string]any{"node": "old"}},
		{Action: "cordon"},
	}}
	if _, err := Run(ctxb, e.pass(targets), d); !errors.Is(err, ErrStale) {
		t.Fatalf("err %v, want stale", err)
	}
	if !slices.Equal(e.writes, []string{"patch NodeClaim/" + claimA}) {
		t.Fatalf("writes %v, want only the refused confirmation", e.writes)
	}
	if after := e.node(oldNode); after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("the node was written: %v %v", after.Annotations, after.Spec.Unschedulable)
	}
}

// The surge-ready shape: a no-op election on the claim, the pool's mirror,
// the claim's own write, the placeholder's delete. The election is
// confirmed once (before the pool's patch) and no write is refused.
func TestConfirmedElectionIsNotConfirmedAgain(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "pending")),
		mkClaim(claimA, ann(keyState, "pending", keyStarted, "2026-11-30T09:00:00Z")),
		mkPod(phNS, "ph-"+claimA, hostNode, map[string]string{labelPair: claimA}))
	targets := e.targets()
	targets.Placeholder = getPod(t, e, phNS, "ph-"+claimA)
	d := engine.Decision{Transition: "test", Steps: []engine.Step{
		{Action: "claim-state", Elect: true, Args: map[string]any{"from": []any{"none", "pending"}, "to": "pending", "stampStartedAtOnce": true}},
		{Action: "pool-mirror", Elect: true, Args: map[string]any{"drainingAt": true}},
		{Action: "claim-state", Elect: true, Args: map[string]any{"from": []any{"pending"}, "to": "draining"}},
		{Action: "placeholder-delete"},
	}}
	if ran, err := Run(ctxb, e.pass(targets), d); err != nil || !ran.Owned {
		t.Fatalf("ran %+v err %v", ran, err)
	}
	want := []string{"patch NodeClaim/" + claimA, "patch NodePool/" + poolName, "patch NodeClaim/" + claimA, "delete Pod/" + phNS + "/ph-" + claimA}
	if !slices.Equal(e.writes, want) {
		t.Fatalf("writes %v, want %v", e.writes, want)
	}
	if e.bodies[0] != `{"metadata":{"resourceVersion":"999"}}` {
		t.Fatalf("first write %s, want the confirmation", e.bodies[0])
	}
	if e.claim(claimA).Annotations[keyState] != "draining" || e.exists(targets.Placeholder) {
		t.Fatal("the pass did not finish")
	}
}

// A repair whose failure write meets a newer claim stops there: nothing is
// deleted or unmarked that the announcement would then never name.
func TestRepairStrandedStopsWhenStale(t *testing.T) {
	e, targets := repairStrandedWorld(t, claimA)
	update(t, e.base, mkClaim("claim-b", nil), func(c *karpv1.NodeClaim) { c.Labels = map[string]string{"touched": "yes"} })
	p := e.pass(targets)
	res, err := step(p, "repair-stranded", nil)
	if err != nil || res.Outcome != Stale || !p.stale {
		t.Fatalf("%s %v, want stale", res.Outcome, err)
	}
	if !e.exists(mkPod(phNS, "nrc-surge-claim-b", "", nil)) || e.node("node-b").Annotations[keyOwned] != "true" {
		t.Fatal("a stale repair deleted or unmarked")
	}
}
