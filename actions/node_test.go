package actions

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestFreeze(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ann           map[string]string
		want          map[string]string
		operatorOwned bool
	}{
		{name: "unprotected node: set and owned", ann: nil, want: ann(keyDND, "true", keyOwned, "true")},
		{name: "an operator's own true is never taken over", ann: ann(keyDND, "true"), want: ann(keyDND, "true", keyOwned, ""), operatorOwned: true},
		{name: "another value is overwritten and owned", ann: ann(keyDND, "false"), want: ann(keyDND, "true", keyOwned, "true")},
		{name: "an empty value is overwritten and owned", ann: ann(keyDND, ""), want: ann(keyDND, "true", keyOwned, "true")},
		{name: "ours already: unchanged", ann: ann(keyDND, "true", keyOwned, "true"), want: ann(keyDND, "true", keyOwned, "true")},
		{name: "other annotations survive", ann: ann("team", "a"), want: ann("team", "a", keyDND, "true", keyOwned, "true")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mkNode(oldNode, map[string]string{"zone": "a"}, tc.ann, false))
			res, err := step(e.pass(e.targets()), "freeze", map[string]any{"node": "old"})
			if err != nil || res.Outcome != Done {
				t.Fatalf("%s %v", res.Outcome, err)
			}
			if !strings.Contains(res.Did, "operator-owned: "+map[bool]string{true: "true", false: "false"}[tc.operatorOwned]) {
				t.Errorf("Did %q", res.Did)
			}
			n := e.node(oldNode)
			wantAnn(t, "node", n.Annotations, tc.want)
			if n.Labels[labelPair] != claimA || n.Labels["zone"] != "a" {
				t.Fatalf("labels %v, want surge-for=%s beside the node's own", n.Labels, claimA)
			}
			// idempotent: the same observation again writes nothing new
			after := e.state()
			e.resetLog()
			targets := e.targets()
			if _, err := step(e.pass(targets), "freeze", map[string]any{"node": "old"}); err != nil {
				t.Fatal(err)
			}
			if len(e.writes) != 0 || e.state() != after {
				t.Fatalf("second run wrote %v", e.writes)
			}
		})
	}
}

func TestFreezeSurgeHost(t *testing.T) {
	e := newEnv(t, mkNode(oldNode, nil, nil, false), mkNode(hostNode, nil, nil, false))
	targets := e.targets()
	targets.SurgeHost = e.node(hostNode)
	if _, err := step(e.pass(targets), "freeze", map[string]any{"node": "surgeHost"}); err != nil {
		t.Fatal(err)
	}
	wantAnn(t, "surge host", e.node(hostNode).Annotations, ann(keyDND, "true", keyOwned, "true"))
	if e.node(hostNode).Labels[labelPair] != claimA {
		t.Fatal("surge host not paired with the claim")
	}
	if old := e.node(oldNode); len(old.Annotations) != 0 || len(old.Labels) != 0 {
		t.Fatalf("the old node was touched: %v %v", old.Annotations, old.Labels)
	}
}

func TestFreezeWithoutANode(t *testing.T) {
	e := newEnv(t)
	for _, which := range []string{"old", "surgeHost"} {
		res, err := step(e.pass(e.targets()), "freeze", map[string]any{"node": which})
		if err != nil || res.Outcome != Done || !strings.Contains(res.Did, "no node") {
			t.Fatalf("%s: %q %v", which, res.Did, err)
		}
	}
	if len(e.writes) != 0 {
		t.Fatalf("writes %v", e.writes)
	}
}

func TestFreezeNodeGoneIsNoError(t *testing.T) {
	e := newEnv(t, mkNode(oldNode, nil, nil, false))
	targets := e.targets()
	e.onPatch = func(obj client.Object, _ client.Patch) error {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, obj.GetName())
	}
	if _, err := step(e.pass(targets), "freeze", map[string]any{"node": "old"}); err != nil {
		t.Fatal(err)
	}
	e.onPatch = func(client.Object, client.Patch) error { return errors.New("boom") }
	if _, err := step(e.pass(targets), "freeze", map[string]any{"node": "old"}); err == nil || !strings.Contains(err.Error(), oldNode) || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("error %v", err)
	}
}

func TestUnfreeze(t *testing.T) {
	pair := map[string]string{labelPair: claimA, "zone": "a"}
	e := newEnv(t,
		mkNode(oldNode, pair, ann(keyDND, "true", keyOwned, "true", keyCordoned, "true"), true),
		mkNode(hostNode, map[string]string{labelPair: claimA}, ann(keyDND, "true"), false), // the operator's own
		mkNode("node-other", map[string]string{labelPair: "claim-other"}, ann(keyDND, "true", keyOwned, "true"), false),
		mkNode("node-free", nil, ann(keyDND, "true", keyOwned, "true"), false),
	)
	res, err := step(e.pass(e.targets()), "unfreeze", nil)
	if err != nil || res.Outcome != Done {
		t.Fatalf("%s %v", res.Outcome, err)
	}
	old := e.node(oldNode)
	wantAnn(t, "old node", old.Annotations, ann(keyDND, "", keyOwned, "", keyCordoned, "true"))
	if _, ok := old.Labels[labelPair]; ok || old.Labels["zone"] != "a" {
		t.Fatalf("old node labels %v", old.Labels)
	}
	if !old.Spec.Unschedulable {
		t.Fatal("unfreeze uncordoned")
	}
	host := e.node(hostNode)
	wantAnn(t, "surge host", host.Annotations, ann(keyDND, "true"))
	if _, ok := host.Labels[labelPair]; ok {
		t.Fatal("surge-for kept on the surge host")
	}
	// another rotation's nodes, and nodes paired with nothing, are not ours to touch
	wantAnn(t, "other", e.node("node-other").Annotations, ann(keyDND, "true", keyOwned, "true"))
	if e.node("node-other").Labels[labelPair] != "claim-other" {
		t.Fatal("another rotation's pairing removed")
	}
	wantAnn(t, "free", e.node("node-free").Annotations, ann(keyDND, "true", keyOwned, "true"))
	if got := res.Unfrozen; len(got) != 2 {
		t.Fatalf("unfrozen %q, want both paired nodes", got)
	}

	// idempotent: nothing is paired any more
	after := e.state()
	e.resetLog()
	res, err = step(e.pass(e.targets()), "unfreeze", nil)
	if err != nil || len(res.Unfrozen) != 0 || len(e.writes) != 0 || e.state() != after {
		t.Fatalf("second run: %v %q writes %v", err, res.Unfrozen, e.writes)
	}
}

func TestUnfreezeListError(t *testing.T) {
	e := newEnv(t, mkNode(oldNode, map[string]string{labelPair: claimA}, nil, false))
	e.onList = func(client.ObjectList) error { return errors.New("list refused") }
	_, err := step(e.pass(e.targets()), "unfreeze", nil)
	if err == nil || !strings.Contains(err.Error(), "listing nodes paired with "+claimA) {
		t.Fatalf("error %v", err)
	}
}

func TestCordonNeverAdoptsAnOperatorsCordon(t *testing.T) {
	e := newEnv(t, mkNode(oldNode, nil, ann("reason", "maintenance"), true))
	res, err := step(e.pass(e.targets()), "cordon", nil)
	if err != nil || res.Outcome != Done || outcome(res) != Raced {
		t.Fatalf("%s %q %v", res.Outcome, res.Did, err)
	}
	n := e.node(oldNode)
	wantAnn(t, "node", n.Annotations, ann(keyCordoned, "", "reason", "maintenance"))
	if !n.Spec.Unschedulable {
		t.Fatal("operator cordon lifted")
	}
	// so a later uncordon leaves it alone
	res, err = step(e.pass(e.targets()), "uncordon", nil)
	if err != nil || outcome(res) != Raced {
		t.Fatalf("%q %v", res.Did, err)
	}
	if !e.node(oldNode).Spec.Unschedulable {
		t.Fatal("uncordon lifted an operator's cordon")
	}
	if len(e.writes) != 0 {
		t.Fatalf("writes %v", e.writes)
	}
}

func TestCordonOursInPlace(t *testing.T) {
	e := newEnv(t, mkNode(oldNode, nil, ann(keyCordoned, "true"), true))
	res, err := step(e.pass(e.targets()), "cordon", nil)
	if err != nil || outcome(res) != Claimed {
		t.Fatalf("%q %v", res.Did, err)
	}
	if len(e.writes) != 0 {
		t.Fatalf("writes %v, want none: our cordon is in place", e.writes)
	}
}

// A stale marker on a schedulable node (an operator uncordoned it) is
// re-asserted as our cordon.
func TestCordonReassertsOverAStaleMarker(t *testing.T) {
	e := newEnv(t, mkNode(oldNode, nil, ann(keyCordoned, "true"), false))
	if _, err := step(e.pass(e.targets()), "cordon", nil); err != nil {
		t.Fatal(err)
	}
	if !e.node(oldNode).Spec.Unschedulable {
		t.Fatal("not cordoned")
	}
}

func TestCordonAndUncordonWithoutANode(t *testing.T) {
	e := newEnv(t)
	for _, a := range []string{"cordon", "uncordon"} {
		res, err := step(e.pass(e.targets()), a, nil)
		if err != nil || res.Outcome != Done || !strings.Contains(res.Did, "no node") {
			t.Fatalf("%s: %q %v", a, res.Did, err)
		}
	}
	if len(e.writes) != 0 || e.gets != 0 {
		t.Fatalf("writes %v, reads %d", e.writes, e.gets)
	}
}

func TestCordonUncordonRoundTrip(t *testing.T) {
	e := newEnv(t, mkNode(oldNode, nil, ann("team", "a"), false))
	before := e.node(oldNode)
	for _, a := range []string{"cordon", "cordon", "uncordon", "uncordon"} {
		if _, err := step(e.pass(e.targets()), a, nil); err != nil {
			t.Fatal(err)
		}
	}
	after := e.node(oldNode)
	if after.Spec.Unschedulable || len(after.Annotations) != len(before.Annotations) || after.Annotations["team"] != "a" {
		t.Fatalf("after cordon and uncordon: unschedulable %v, annotations %v", after.Spec.Unschedulable, after.Annotations)
	}
	if len(e.writes) != 2 {
		t.Fatalf("writes %v, want one cordon and one uncordon", e.writes)
	}
}

// Freeze decides whether do-not-disrupt is the operator's on a fresh read:
// a cache that has not yet seen the operator's "true" must not make it ours
// (else unfreeze would later remove the operator's protection).
func TestFreezeNeverAdoptsAnOperatorsAnnotationSeenStale(t *testing.T) {
	e := newEnv(t, mkNode(oldNode, nil, ann(keyDND, "true"), false))
	targets := e.targets()
	stale := e.node(oldNode).DeepCopy() // the cached copy, from before the operator's write
	stale.Annotations, stale.ResourceVersion = nil, "1"
	targets.OldNode = stale
	if _, err := step(e.pass(targets), "freeze", map[string]any{"node": "old"}); err != nil {
		t.Fatal(err)
	}
	if got := e.node(oldNode).Annotations[keyOwned]; got != "" {
		t.Errorf("freeze marked the operator's do-not-disrupt as ours (%s=%q)", keyOwned, got)
	}
	if _, err := step(e.pass(e.targets()), "unfreeze", nil); err != nil {
		t.Fatal(err)
	}
	if got := e.node(oldNode).Annotations[keyDND]; got != "true" {
		t.Errorf("unfreeze removed the operator's do-not-disrupt (now %q)", got)
	}
}
