package actions

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/rules"
)

// announced is an earned announcement as the tests read it.
type announced struct {
	what    Announcement
	results []Result
}

func announcedOf(ran Ran) []announced {
	got := make([]announced, len(ran.Earned))
	for i, e := range ran.Earned {
		got[i] = announced{e.What, e.Before}
	}
	return got
}

func decision(id string, steps ...engine.Step) engine.Decision {
	return engine.Decision{Machine: "rotation", Transition: id, Steps: steps}
}

func TestRunStopsWhenAnElectingStepLoses(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA)), mkClaim(claimA, ann(keyState, "pending")))
	p := e.pass(e.targets())
	ran, err := Run(ctxb, p, decision("failed.force-expiry",
		engine.Step{Action: "claim-state", Elect: true, Args: map[string]any{"from": []any{"failed"}, "to": "expired"}},
		engine.Step{Action: "announce", Args: map[string]any{"what": "RotationExpired"}},
		engine.Step{Action: "anchor-clear"},
	))
	if err != nil || ran.Owned {
		t.Fatalf("ran %+v err %v, want a lost election", ran, err)
	}
	if got := announcedOf(ran); len(got) != 0 {
		t.Fatalf("announced %v after losing", got)
	}
	if len(p.Results) != 1 || p.Results[0].Action != "claim-state" || p.Results[0].Outcome != Raced {
		t.Fatalf("results %+v", p.Results)
	}
	if len(e.writes) != 0 || e.pool(poolName).Annotations[keyAnchor] != claimA {
		t.Fatalf("later steps ran: writes %v", e.writes)
	}
}

func TestRunANonElectingRaceContinues(t *testing.T) {
	// governance-lost resets the claim's state only if it is still draining;
	// a claim already reset does not stop the anchor clear.
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA)), mkClaim(claimA, nil))
	p := e.pass(e.targets())
	ran, err := Run(ctxb, p, decision("draining.governance-lost",
		engine.Step{Action: "claim-state", Args: map[string]any{"from": []any{"draining"}, "to": "none"}},
		engine.Step{Action: "anchor-clear", Elect: true},
		engine.Step{Action: "announce", Args: map[string]any{"what": "GovernanceLost"}},
	))
	if err != nil || !ran.Owned {
		t.Fatalf("ran %+v err %v", ran, err)
	}
	if got := announcedOf(ran); len(got) != 1 || got[0].what != GovernanceLost {
		t.Fatalf("announced %+v", got)
	}
	if e.pool(poolName).Annotations[keyAnchor] != "" {
		t.Fatal("anchor not cleared")
	}
}

func TestRunElectOnAnUnconditionalStepContinues(t *testing.T) {
	e := newEnv(t, mkNode(oldNode, nil, nil, true)) // an operator's cordon: cordon's write races
	p := e.pass(e.targets())
	ran, err := Run(ctxb, p, decision("t",
		engine.Step{Action: "cordon", Elect: true},
		engine.Step{Action: "announce", Args: map[string]any{"what": "SurgeWaiting"}},
	))
	if err != nil || !ran.Owned || len(p.Results) != 2 {
		t.Fatalf("ran %+v err %v results %+v: Done always wins", ran, err, p.Results)
	}
}

func TestRunErrorNamesTransitionAndStep(t *testing.T) {
	e := newEnv(t, mkClaim(claimA, ann(keyState, "pending")))
	p := e.pass(e.targets()) // no NewPlaceholder: placeholder-ensure errors
	ran, err := Run(ctxb, p, decision("pending.create-placeholder",
		engine.Step{Action: "claim-state", Elect: true, Args: map[string]any{"from": []any{"none", "pending"}, "to": "pending"}},
		engine.Step{Action: "placeholder-ensure"},
		engine.Step{Action: "announce", Args: map[string]any{"what": "PlaceholderCreated"}},
	))
	if ran.Owned || err == nil {
		t.Fatalf("ran %+v err %v", ran, err)
	}
	if want := "transition pending.create-placeholder step 2 (placeholder-ensure): placeholder for " + claimA; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %q, want it to start %q", err, want)
	}
	if len(ran.Earned) != 0 {
		t.Fatal("announced what no step before the error earned")
	}
	if len(p.Results) != 2 || p.Results[1].Action != "placeholder-ensure" {
		t.Fatalf("results %+v: the failed step is recorded", p.Results)
	}
}

func TestRunUnknownAction(t *testing.T) {
	e := newEnv(t)
	p := e.pass(e.targets())
	ran, err := Run(ctxb, p, decision("x.y", engine.Step{Action: "announce", Args: map[string]any{"what": "NoCandidate"}}, engine.Step{Action: "drain-everything"}))
	if ran.Owned || err == nil || err.Error() != `transition x.y step 2: action "drain-everything" is not implemented` {
		t.Fatalf("ran %+v err %v", ran, err)
	}
}

func TestRunEmptyDecisionOwns(t *testing.T) {
	e := newEnv(t)
	ran, err := Run(ctxb, e.pass(e.targets()), decision("window.open.stamped"))
	if err != nil || !ran.Owned {
		t.Fatalf("ran %+v err %v", ran, err)
	}
}

func TestAnnounceHandsTheResultsSoFar(t *testing.T) {
	e := newEnv(t, mkPool(poolName, nil), mkClaim(claimA, nil))
	p := e.pass(e.targets())
	ran, err := Run(ctxb, p, decision("idle.start",
		engine.Step{Action: "anchor-write", Elect: true, Args: map[string]any{"mode": "forcefulFallback"}},
		engine.Step{Action: "claim-state", Elect: true, Args: map[string]any{"to": "draining"}},
		engine.Step{Action: "announce", Args: map[string]any{"what": "ForcefulFallback"}},
		engine.Step{Action: "announce", Args: map[string]any{"what": "DrainStarted"}},
	))
	if err != nil || !ran.Owned {
		t.Fatalf("ran %+v err %v", ran, err)
	}
	got := announcedOf(ran)
	if len(got) != 2 || got[0].what != ForcefulFallback || got[1].what != DrainStarted {
		t.Fatalf("announcements %+v", got)
	}
	first := got[0].results
	if len(first) != 2 || first[0].Action != "anchor-write" || first[1].Action != "claim-state" {
		t.Fatalf("first announcement saw %+v", first)
	}
	if r, ok := Last(first, ActionClaimState); !ok || r.Outcome != Claimed {
		t.Fatalf("claim-state result %+v", r)
	}
	if len(got[1].results) != 3 || got[1].results[2].Did != "announced ForcefulFallback" {
		t.Fatalf("second announcement saw %+v", got[1].results)
	}
}

// What a step earned before a later step fails is returned with the error:
// the reconciler announces it, as the write that earned it landed.
func TestRunReturnsWhatWasEarnedBeforeAnError(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA)), mkClaim(claimA, nil))
	p := e.pass(e.targets()) // no NewPlaceholder: placeholder-ensure errors
	ran, err := Run(ctxb, p, decision("pending.force-expiry",
		engine.Step{Action: "claim-state", Elect: true, Args: map[string]any{"from": []any{"none", "pending"}, "to": "expired"}},
		engine.Step{Action: "announce", Args: map[string]any{"what": "RotationExpired"}},
		engine.Step{Action: "placeholder-ensure"},
		engine.Step{Action: "announce", Args: map[string]any{"what": "PlaceholderCreated"}},
	))
	if ran.Owned || err == nil || !strings.Contains(err.Error(), "step 3 (placeholder-ensure)") {
		t.Fatalf("ran %+v err %v, want the third step's error", ran, err)
	}
	got := announcedOf(ran)
	if len(got) != 1 || got[0].what != RotationExpired || len(got[0].results) != 1 || got[0].results[0].Action != ActionClaimState {
		t.Fatalf("earned %+v, want RotationExpired after the claim-state write alone", got)
	}
	if e.claim(claimA).Annotations[keyState] != "expired" {
		t.Fatal("the write that earned the announcement did not land")
	}
}

// A pass that goes stale after an announce step returns what was earned
// before it with ErrStale: the write that earned it landed.
func TestRunReturnsWhatWasEarnedBeforeAStaleWrite(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA)), mkClaim(claimA, nil))
	p := e.pass(e.targets())
	np := e.pool(poolName)
	np.Annotations["operator"] = "touched" // the pool moves on past the pass's copy
	if err := e.base.Update(ctxb, np); err != nil {
		t.Fatal(err)
	}
	ran, err := Run(ctxb, p, decision("pending.force-expiry",
		engine.Step{Action: ActionClaimState, Elect: true, Args: map[string]any{"from": []any{"none", "pending"}, "to": "expired"}},
		engine.Step{Action: ActionAnnounce, Args: map[string]any{"what": "RotationExpired"}},
		engine.Step{Action: ActionAnchorClear},
	))
	if !errors.Is(err, ErrStale) || ran.Owned {
		t.Fatalf("ran %+v err %v, want stale", ran, err)
	}
	if got := announcedOf(ran); len(got) != 1 || got[0].what != RotationExpired {
		t.Fatalf("earned %+v, want RotationExpired", got)
	}
}

// RunFrom returns right after the step that earned an announcement, before
// the cleanup after it runs, and goes on from there: a process that dies in
// the cleanup has said what the write before it earned.
func TestRunFromReturnsAfterWhatWasEarned(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA)), mkClaim(claimA, nil))
	p := e.pass(e.targets())
	d := decision("pending.force-expiry",
		engine.Step{Action: ActionClaimState, Elect: true, Args: map[string]any{"from": []any{"none", "pending"}, "to": "expired"}},
		engine.Step{Action: ActionAnnounce, Args: map[string]any{"what": "RotationExpired"}},
		engine.Step{Action: ActionAnchorClear},
	)
	first, err := RunFrom(ctxb, p, d, 0)
	if err != nil || first.Done || first.Next != 2 || len(first.Earned) != 1 || first.Earned[0].What != RotationExpired {
		t.Fatalf("first %+v err %v: want RotationExpired, and step 3 next", first, err)
	}
	if e.pool(poolName).Annotations[keyAnchor] != claimA {
		t.Fatal("the cleanup ran before what was earned was returned")
	}
	rest, err := RunFrom(ctxb, p, d, first.Next)
	if err != nil || !rest.Done || !rest.Owned || len(rest.Earned) != 0 {
		t.Fatalf("rest %+v err %v", rest, err)
	}
	if e.pool(poolName).Annotations[keyAnchor] != "" {
		t.Fatal("the cleanup did not run")
	}
	// an announcement at the end of a row ends the run with it
	p = e.pass(e.targets())
	last, err := RunFrom(ctxb, p, decision("t", engine.Step{Action: ActionAnnounce, Args: map[string]any{"what": "NoCandidate"}}), 0)
	if err != nil || !last.Done || !last.Owned || len(last.Earned) != 1 {
		t.Fatalf("last %+v err %v", last, err)
	}
}

// An announce step writes nothing and records what it earned; a second
// decision's Run returns its own share only.
func TestAnnounceRecordsWhatWasEarned(t *testing.T) {
	p := &Pass{}
	res, err := step(p, ActionAnnounce, map[string]any{"what": "NoCandidate"})
	if err != nil || res.Outcome != Done || res.Did != "announced NoCandidate" || len(p.earned) != 1 || p.earned[0].What != NoCandidate {
		t.Fatalf("%+v %v earned %+v", res, err, p.earned)
	}
	ran, err := Run(ctxb, p, decision("window.closed.idle", engine.Step{Action: ActionAnnounce, Args: map[string]any{"what": "SkipHeld"}}))
	if err != nil || !ran.Owned || len(ran.Earned) != 1 || ran.Earned[0].What != SkipHeld || len(ran.Earned[0].Before) != 1 {
		t.Fatalf("ran %+v err %v: want SkipHeld alone, after the one earlier result", ran, err)
	}
}

func TestWonAndLast(t *testing.T) {
	for o, want := range map[Outcome]bool{Claimed: true, Done: true, Raced: false, Gone: false, "": false} {
		if (Result{Outcome: o}).Won() != want {
			t.Errorf("Won(%q) != %v", o, want)
		}
	}
	results := []Result{
		{Action: "claim-state", Did: "first"}, {Action: "freeze"}, {Action: "claim-state", Did: "second"},
	}
	if r, ok := Last(results, "claim-state"); !ok || r.Did != "second" {
		t.Fatalf("Last = %+v %v", r, ok)
	}
	if _, ok := Last(results, "cordon"); ok {
		t.Fatal("Last found an action that never ran")
	}
}

func TestCatalogAndRegistryAgree(t *testing.T) {
	c := Catalog()
	if len(c) != len(all) || len(registry) != len(all) {
		t.Fatalf("catalog %d, registry %d, actions %d: a name is declared twice", len(c), len(registry), len(all))
	}
	for name, spec := range c {
		if spec.Name != name {
			t.Errorf("catalog key %q holds %q", name, spec.Name)
		}
		if registry[name] == nil {
			t.Errorf("%s has no body", name)
		}
		if strings.TrimSpace(spec.Description) == "" {
			t.Errorf("%s has no description", name)
		}
	}
	// the conditional writes a step may elect on report an outcome
	for _, name := range []string{"anchor-write", "anchor-release", "anchor-clear", "claim-state", "window-clear"} {
		if !c[name].Reports {
			t.Errorf("%s does not report an outcome", name)
		}
	}
	if c["anchor-write"].Role != engine.RoleAnchorWrite || c["anchor-release"].Role != engine.RoleAnchorEnd ||
		c["anchor-clear"].Role != engine.RoleAnchorEnd || c["announce"].Role != engine.RoleAnnounce {
		t.Error("roles the ordering rules rely on are wrong")
	}
	if got := c["announce"].Args["what"].Values; !slices.Equal(got, names(Announcements)) {
		t.Errorf("announce accepts %v", got)
	}
}

// The shipped table names only catalogued actions, elects only on steps
// that report, and between them uses every action and announcement.
func TestTheShippedTableFitsTheCatalog(t *testing.T) {
	tbl, err := engine.Parse(rules.Table)
	if err != nil {
		t.Fatal(err)
	}
	c := Catalog()
	usedActions, usedAnnouncements := map[string]bool{}, map[string]bool{}
	for _, m := range tbl.Machines {
		for _, tr := range m.Transitions {
			for i, st := range tr.Steps {
				spec, ok := c[st.Action]
				if !ok {
					t.Errorf("%s step %d: %q is not in the catalog", tr.ID, i+1, st.Action)
					continue
				}
				if st.Elect && !spec.Reports {
					t.Errorf("%s step %d: elects on %s, which reports no outcome", tr.ID, i+1, st.Action)
				}
				usedActions[st.Action] = true
				if w, ok := st.Args["what"].(string); ok {
					usedAnnouncements[w] = true
				}
			}
		}
	}
	for name := range c {
		if !usedActions[name] {
			t.Errorf("action %s is never used by the table", name)
		}
	}
	for _, a := range Announcements {
		if !usedAnnouncements[string(a)] {
			t.Errorf("announcement %s is never made by the table", a)
		}
	}
}

func shippedSteps(t *testing.T, id string) engine.Decision {
	t.Helper()
	tbl, err := engine.Parse(rules.Table)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range tbl.Machines {
		for _, tr := range m.Transitions {
			if tr.ID == id {
				return engine.Decision{Machine: m.Name, Transition: id, Steps: tr.Steps}
			}
		}
	}
	t.Fatalf("no transition %s", id)
	return engine.Decision{}
}

// The shipped pending.ready-timeout row rolls a rotation back: run twice on
// one observation (two passes), it fails the claim exactly once.
func TestShippedReadyTimeoutRollback(t *testing.T) {
	const surgeClaim = "claim-surge"
	old := mkClaim(claimA, ann(keyState, "pending", keyStarted, "2026-11-30T09:00:00Z", keySurge, surgeClaim, keyRetry, "1", keyFailed, "2026-11-20T00:00:00Z"))
	old.Status.NodeName = oldNode
	induced := mkClaim(surgeClaim, nil)
	induced.CreationTimestamp = metav1.Time{Time: now.Add(-50 * time.Minute)}
	induced.Status.NodeName = hostNode
	ds := mkPod("kube-system", "ds-1", hostNode, nil)
	ds.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", APIVersion: "apps/v1", UID: "ds"}}
	ph := mkPod(phNS, "ph-"+claimA, hostNode, map[string]string{labelPair: claimA})
	e := newEnv(t,
		mkPool(poolName, ann(keyAnchor, claimA, keyLastFail, "2026-11-20T00:00:00Z")),
		old, induced, ph, ds,
		mkNode(oldNode, map[string]string{labelPair: claimA}, ann(keyDND, "true", keyOwned, "true", keyCordoned, "true"), true),
		mkNode(hostNode, map[string]string{labelPair: claimA}, ann(keyDND, "true", keyOwned, "true"), false),
	)
	targets := e.targets()
	targets.InducedClaim, targets.Placeholder, targets.SurgeHost = e.claim(surgeClaim), ph, e.node(hostNode)
	d := shippedSteps(t, "pending.ready-timeout")

	p := e.pass(targets)
	ran, err := Run(ctxb, p, d)
	if err != nil || !ran.Owned {
		t.Fatalf("ran %+v err %v", ran, err)
	}
	c := e.claim(claimA)
	wantAnn(t, "claim", c.Annotations, ann(keyState, "failed", keyFailed, nowStamp, keyRetry, "2", keyStarted, "", keySurge, ""))
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, "", keyLastFail, nowStamp))
	for _, n := range []string{oldNode, hostNode} {
		node := e.node(n)
		wantAnn(t, n, node.Annotations, ann(keyDND, "", keyOwned, "", keyCordoned, ""))
		if _, ok := node.Labels[labelPair]; ok || node.Spec.Unschedulable {
			t.Errorf("%s: still paired or cordoned", n)
		}
	}
	if e.exists(induced) || e.exists(ph) {
		t.Fatal("surge claim or placeholder left behind")
	}
	if !e.exists(ds) {
		t.Fatal("a DaemonSet Pod was deleted")
	}
	got := announcedOf(ran)
	if len(got) != 1 || got[0].what != RotationFailed {
		t.Fatalf("announcements %+v", got)
	}
	if r, _ := Last(got[0].results, ActionClaimState); r.Failure == nil || *r.Failure != (Failure{Reason: "Timeout", FailedAt: nowStamp, RetryCount: "2"}) {
		t.Fatalf("RotationFailed reads the failure record %+v", r.Failure)
	}

	// a second pass that observed the same pending claim: its electing
	// write is a no-op on that copy, so the reap confirms the election
	// first — a refused lock-only patch — and the pass stops as stale
	after := e.state()
	e.resetLog()
	p2 := e.pass(targets)
	ran2, err := Run(ctxb, p2, d)
	if !errors.Is(err, ErrStale) || ran2.Owned {
		t.Fatalf("second pass: ran %+v err %v, want stale", ran2, err)
	}
	if got2 := announcedOf(ran2); len(got2) != 0 || !slices.Equal(e.writes, []string{"patch NodeClaim/" + claimA}) || e.state() != after {
		t.Fatalf("second pass announced %v, wrote %v", ran2.Earned, e.writes)
	}
	if e.bodies[0] != `{"metadata":{"resourceVersion":"`+targets.ClaimObject.ResourceVersion+`"}}` {
		t.Fatalf("confirmation %s, want the observed resourceVersion alone", e.bodies[0])
	}
}

// gone.complete: the claim is gone; one conditional write releases the
// anchor and reads the outcome; only the releasing pass announces.
func TestShippedCompletion(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "draining", keyDraining, "2026-11-30T09:50:00Z", keySurgeWait, "2m0s")),
		mkNode(hostNode, map[string]string{labelPair: claimA}, ann(keyDND, "true", keyOwned, "true"), false))
	targets := e.targets()
	d := shippedSteps(t, "gone.complete")
	var announcedOutcomes []string
	for range 2 {
		p := e.pass(targets)
		ran, err := Run(ctxb, p, d)
		if err != nil && !errors.Is(err, ErrStale) {
			t.Fatal(err)
		}
		for _, e := range ran.Earned {
			r, _ := Last(e.Before, ActionAnchorRelease)
			if r.Released == nil {
				t.Fatalf("%s earned after a release that read no outcome", e.What)
			}
			announcedOutcomes = append(announcedOutcomes, string(e.What)+" "+r.Released.Outcome+" "+r.Released.DrainingAt+" "+r.Released.SurgeWait)
		}
	}
	if want := []string{"RotationCompleted success 2026-11-30T09:50:00Z 2m0s"}; !slices.Equal(announcedOutcomes, want) {
		t.Fatalf("announced %q, want %q", announcedOutcomes, want)
	}
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, "", keyMirror, "", keyLastRot, nowStamp))
	if n := e.node(hostNode); n.Annotations[keyDND] != "" || n.Labels[labelPair] != "" {
		t.Fatal("surge host still frozen")
	}
}

// window.closed.missed: of two passes that read the same stamp, one
// announces the missed window.
func TestShippedWindowMissedOnce(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyWindow, "2026-11-30T02:00:00Z")))
	targets := e.targets()
	d := shippedSteps(t, "window.closed.missed")
	var all []announced
	for range 2 {
		p := e.pass(targets)
		ran, err := Run(ctxb, p, d)
		if err != nil && !errors.Is(err, ErrStale) {
			t.Fatal(err)
		}
		all = append(all, announcedOf(ran)...)
	}
	if len(all) != 1 || all[0].what != WindowMissed {
		t.Fatalf("announcements %+v", all)
	}
	if r, _ := Last(all[0].results, ActionWindowClear); r.WindowOpenedAt != "2026-11-30T02:00:00Z" {
		t.Fatalf("window-clear result %+v", r)
	}
}
