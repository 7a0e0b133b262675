package actions

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/rules"
)

// announced records what the announce hook was handed.
type announced struct {
	what    Announcement
	results []Result
}

func recordAnnouncements(p *Pass, err error) *[]announced {
	var got []announced
	p.Announce = func(_ context.Context, what Announcement, results []Result) error {
		got = append(got, announced{what, slices.Clone(results)})
		return err
	}
	return &got
}

func decision(id string, steps ...engine.Step) engine.Decision {
	return engine.Decision{Machine: "rotation", Transition: id, Steps: steps}
}

func TestRunStopsWhenAnElectingStepLoses(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA)), mkClaim(claimA, ann(keyState, "pending")))
	p := e.pass(e.targets())
	got := recordAnnouncements(p, nil)
	owned, err := Run(ctxb, p, decision("failed.force-expiry",
		engine.Step{Action: "claim-state", Elect: true, Args: map[string]any{"from": []any{"failed"}, "to": "expired"}},
		engine.Step{Action: "announce", Args: map[string]any{"what": "RotationExpired"}},
		engine.Step{Action: "anchor-clear"},
	))
	if err != nil || owned {
		t.Fatalf("owned %v err %v, want a lost election", owned, err)
	}
	if len(*got) != 0 {
		t.Fatalf("announced %v after losing", *got)
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
	got := recordAnnouncements(p, nil)
	owned, err := Run(ctxb, p, decision("draining.governance-lost",
		engine.Step{Action: "claim-state", Args: map[string]any{"from": []any{"draining"}, "to": "none"}},
		engine.Step{Action: "anchor-clear", Elect: true},
		engine.Step{Action: "announce", Args: map[string]any{"what": "GovernanceLost"}},
	))
	if err != nil || !owned {
		t.Fatalf("owned %v err %v", owned, err)
	}
	if len(*got) != 1 || (*got)[0].what != GovernanceLost {
		t.Fatalf("announced %+v", *got)
	}
	if e.pool(poolName).Annotations[keyAnchor] != "" {
		t.Fatal("anchor not cleared")
	}
}

func TestRunElectOnAnUnconditionalStepContinues(t *testing.T) {
	e := newEnv(t, mkNode(oldNode, nil, nil, true)) // an operator's cordon: cordon's write races
	p := e.pass(e.targets())
	owned, err := Run(ctxb, p, decision("t",
		engine.Step{Action: "cordon", Elect: true},
		engine.Step{Action: "announce", Args: map[string]any{"what": "SurgeWaiting"}},
	))
	if err != nil || !owned || len(p.Results) != 2 {
		t.Fatalf("owned %v err %v results %+v: Done always wins", owned, err, p.Results)
	}
}

func TestRunErrorNamesTransitionAndStep(t *testing.T) {
	e := newEnv(t, mkClaim(claimA, ann(keyState, "pending")))
	p := e.pass(e.targets()) // no NewPlaceholder: placeholder-ensure errors
	got := recordAnnouncements(p, nil)
	owned, err := Run(ctxb, p, decision("pending.create-placeholder",
		engine.Step{Action: "claim-state", Elect: true, Args: map[string]any{"from": []any{"none", "pending"}, "to": "pending"}},
		engine.Step{Action: "placeholder-ensure"},
		engine.Step{Action: "announce", Args: map[string]any{"what": "PlaceholderCreated"}},
	))
	if owned || err == nil {
		t.Fatalf("owned %v err %v", owned, err)
	}
	if want := "transition pending.create-placeholder step 2 (placeholder-ensure): placeholder for " + claimA; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %q, want it to start %q", err, want)
	}
	if len(*got) != 0 {
		t.Fatal("announced after an error")
	}
	if len(p.Results) != 2 || p.Results[1].Action != "placeholder-ensure" {
		t.Fatalf("results %+v: the failed step is recorded", p.Results)
	}
}

func TestRunUnknownAction(t *testing.T) {
	e := newEnv(t)
	p := e.pass(e.targets())
	owned, err := Run(ctxb, p, decision("x.y", engine.Step{Action: "announce", Args: map[string]any{"what": "NoCandidate"}}, engine.Step{Action: "drain-everything"}))
	if owned || err == nil || err.Error() != `transition x.y step 2: action "drain-everything" is not implemented` {
		t.Fatalf("owned %v err %v", owned, err)
	}
}

func TestRunEmptyDecisionOwns(t *testing.T) {
	e := newEnv(t)
	owned, err := Run(ctxb, e.pass(e.targets()), decision("window.open.stamped"))
	if err != nil || !owned {
		t.Fatalf("owned %v err %v", owned, err)
	}
}

func TestAnnounceHandsTheResultsSoFar(t *testing.T) {
	e := newEnv(t, mkPool(poolName, nil), mkClaim(claimA, nil))
	p := e.pass(e.targets())
	got := recordAnnouncements(p, nil)
	owned, err := Run(ctxb, p, decision("idle.start",
		engine.Step{Action: "anchor-write", Elect: true, Args: map[string]any{"mode": "forcefulFallback"}},
		engine.Step{Action: "claim-state", Elect: true, Args: map[string]any{"to": "draining"}},
		engine.Step{Action: "announce", Args: map[string]any{"what": "ForcefulFallback"}},
		engine.Step{Action: "announce", Args: map[string]any{"what": "DrainStarted"}},
	))
	if err != nil || !owned {
		t.Fatalf("owned %v err %v", owned, err)
	}
	if len(*got) != 2 || (*got)[0].what != ForcefulFallback || (*got)[1].what != DrainStarted {
		t.Fatalf("announcements %+v", *got)
	}
	first := (*got)[0].results
	if len(first) != 2 || first[0].Action != "anchor-write" || first[1].Action != "claim-state" {
		t.Fatalf("first announcement saw %+v", first)
	}
	if r, ok := Last(first, "claim-state"); !ok || r.Values["claim:"+keyState] != "draining" {
		t.Fatalf("claim-state values %+v", r)
	}
	if len((*got)[1].results) != 3 || (*got)[1].results[2].Did != "announced ForcefulFallback" {
		t.Fatalf("second announcement saw %+v", (*got)[1].results)
	}
}

func TestAnnounceErrorStopsTheRun(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA)), mkClaim(claimA, nil))
	p := e.pass(e.targets())
	got := recordAnnouncements(p, errors.New("no handler for RotationExpired"))
	owned, err := Run(ctxb, p, decision("pending.force-expiry",
		engine.Step{Action: "claim-state", Elect: true, Args: map[string]any{"from": []any{"none", "pending"}, "to": "expired"}},
		engine.Step{Action: "announce", Args: map[string]any{"what": "RotationExpired"}},
		engine.Step{Action: "anchor-clear"},
	))
	if owned || err == nil {
		t.Fatalf("owned %v err %v", owned, err)
	}
	for _, want := range []string{"step 2 (announce)", "announcing RotationExpired", "no handler for RotationExpired"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if len(*got) != 1 {
		t.Fatalf("hook called %d times", len(*got))
	}
	if e.pool(poolName).Annotations[keyAnchor] != claimA {
		t.Fatal("anchor-clear ran after the failed announcement")
	}
}

func TestAnnounceWithoutAHook(t *testing.T) {
	p := &Pass{}
	res, err := step(p, "announce", map[string]any{"what": "NoCandidate"})
	if err != nil || res.Outcome != Done || res.Did != "announced NoCandidate" {
		t.Fatalf("%+v %v", res, err)
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
	got := recordAnnouncements(p, nil)
	owned, err := Run(ctxb, p, d)
	if err != nil || !owned {
		t.Fatalf("owned %v err %v", owned, err)
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
	if len(*got) != 1 || (*got)[0].what != RotationFailed {
		t.Fatalf("announcements %+v", *got)
	}
	if r, _ := Last((*got)[0].results, "claim-state"); r.Values["claim:"+keyRetry] != "2" {
		t.Fatalf("RotationFailed reads retry-count %q", r.Values["claim:"+keyRetry])
	}

	// a second pass that observed the same pending claim: its electing
	// write is a no-op on that copy, so the reap confirms the election
	// first — a refused lock-only patch — and the pass stops as stale
	after := e.state()
	e.resetLog()
	p2 := e.pass(targets)
	got2 := recordAnnouncements(p2, nil)
	owned, err = Run(ctxb, p2, d)
	if !errors.Is(err, ErrStale) || owned {
		t.Fatalf("second pass: owned %v err %v, want stale", owned, err)
	}
	if len(*got2) != 0 || !slices.Equal(e.writes, []string{"patch NodeClaim/" + claimA}) || e.state() != after {
		t.Fatalf("second pass announced %v, wrote %v", *got2, e.writes)
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
		p.Announce = func(_ context.Context, what Announcement, results []Result) error {
			r, _ := Last(results, "anchor-release")
			announcedOutcomes = append(announcedOutcomes, string(what)+" "+r.Values["outcome"]+" "+r.Values["drainingAt"]+" "+r.Values["surgeWait"])
			return nil
		}
		if _, err := Run(ctxb, p, d); err != nil && !errors.Is(err, ErrStale) {
			t.Fatal(err)
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
		got := recordAnnouncements(p, nil)
		if _, err := Run(ctxb, p, d); err != nil && !errors.Is(err, ErrStale) {
			t.Fatal(err)
		}
		all = append(all, *got...)
	}
	if len(all) != 1 || all[0].what != WindowMissed {
		t.Fatalf("announcements %+v", all)
	}
	if r, _ := Last(all[0].results, "window-clear"); r.Values["windowOpenedAt"] != "2026-11-30T02:00:00Z" {
		t.Fatalf("window-clear values %v", r.Values)
	}
}
