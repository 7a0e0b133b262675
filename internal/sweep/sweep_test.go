package sweep

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

const (
	lastRot  = "noderotation.io/last-rotation-at"
	lastFail = "noderotation.io/last-failure-at"
	freeze   = "noderotation.io/freeze"
	window   = "noderotation.io/window-opened-at"
)

// crashed is what a crash can leave behind next to an anchored rotation
// (claim-a on pool-a) that the sweep must not touch.
func crashed() []client.Object {
	return []client.Object{
		mkPool("pool-a", ann(keyAnchor, "claim-a", keyMirror, "draining", keyDraining, "2026-11-30T09:00:00Z")),
		mkPool("pool-orphan", ann(keyMirror, "draining", keyDraining, "2026-11-30T09:00:00Z", keyWait, "1m0s", keyMode, "forceful-fallback",
			lastRot, "2026-11-01T00:00:00Z", lastFail, "2026-11-02T00:00:00Z", freeze, "2026-12-01T00:00:00Z", window, "2026-11-30T08:00:00Z")),
		mkPool("pool-clean", ann(lastRot, "2026-11-01T00:00:00Z")),

		mkClaim("claim-a", "node-a", ann(keyState, "pending")),
		mkClaim("claim-b", "node-b", ann(keyState, "pending", "noderotation.io/started-at", "2026-11-30T08:00:00Z")),
		mkClaim("claim-c", "node-c", ann(keyState, "draining")),
		mkClaim("claim-d", "node-d", ann(keyState, "failed", keyFailed, "2026-11-29T00:00:00Z")),
		mkClaim("claim-e", "", ann(keyState, "expired")),
		mkClaim("claim-f", "node-f", nil),

		mkPod(ns, "ph-a", "claim-a"),
		mkPod(ns, "ph-b", "claim-b"),
		mkPod(ns, "ph-gone", "claim-gone"),
		mkPod("default", "not-ours", "claim-b"), // outside our namespace
		mkPod(ns, "unlabelled", ""),
		mkPrePull(ns, "pp-a", "claim-a"),
		mkPrePull(ns, "pp-gone", "claim-gone"),
		mkPrePull("default", "pp-not-ours", "claim-gone"),

		// the anchored rotation's nodes: its old node (paired by its claim) and surge host
		mkNode("node-a", nil, ann(keyDND, "true", keyOwned, "true", keyCordoned, "true"), true),
		mkNode("node-host-a", pair("claim-a"), ann(keyDND, "true", keyOwned, "true"), false),
		// markers no anchor references
		mkNode("node-b", pair("claim-b"), ann(keyDND, "true", keyOwned, "true", "team", "x"), false),
		mkNode("node-c", nil, ann(keyCordoned, "true"), true),
		mkNode("node-x", pair("claim-gone"), ann(keyDND, "true", keyOwned, "true", keyCordoned, "true"), true),
		mkNode("node-opdnd", pair("claim-gone"), ann(keyDND, "true"), false), // the operator's own do-not-disrupt
		// the operator's own cordon and do-not-disrupt, no marker of ours
		mkNode("node-op", nil, ann(keyDND, "true"), true),
		mkNode("node-f", nil, nil, false),
	}
}

func TestSweepCleansWhatNoAnchorReferences(t *testing.T) {
	w := newWorld(t, crashed()...)
	w.run()

	// placeholders
	for name, want := range map[string]bool{"ph-a": true, "ph-b": false, "ph-gone": false, "unlabelled": true, "pp-a": true, "pp-gone": false} {
		if got := w.podExists(ns, name); got != want {
			t.Errorf("placeholder or pre-pull Pod %s exists %v, want %v", name, got, want)
		}
	}
	if !w.podExists("default", "not-ours") || !w.podExists("default", "pp-not-ours") {
		t.Error("a Pod outside the controller's namespace was deleted")
	}

	// nodes
	wantAnn(t, "node-a", w.node("node-a").Annotations, ann(keyDND, "true", keyOwned, "true", keyCordoned, "true"))
	if !w.node("node-a").Spec.Unschedulable {
		t.Error("the anchored rotation's old node was uncordoned")
	}
	wantAnn(t, "node-host-a", w.node("node-host-a").Annotations, ann(keyDND, "true", keyOwned, "true"))
	if w.node("node-host-a").Labels[labelPair] != "claim-a" {
		t.Error("the anchored rotation's surge host was unpaired")
	}
	b := w.node("node-b")
	wantAnn(t, "node-b", b.Annotations, ann(keyDND, "", keyOwned, "", "team", "x"))
	if _, ok := b.Labels[labelPair]; ok {
		t.Error("node-b still paired")
	}
	c := w.node("node-c")
	if c.Spec.Unschedulable || c.Annotations[keyCordoned] != "" {
		t.Error("node-c still cordoned by us")
	}
	x := w.node("node-x")
	wantAnn(t, "node-x", x.Annotations, ann(keyDND, "", keyOwned, "", keyCordoned, ""))
	if x.Spec.Unschedulable || x.Labels[labelPair] != "" {
		t.Error("node-x not fully reversed")
	}
	op := w.node("node-opdnd")
	wantAnn(t, "node-opdnd", op.Annotations, ann(keyDND, "true"))
	if _, ok := op.Labels[labelPair]; ok {
		t.Error("node-opdnd still paired")
	}
	if n := w.node("node-op"); !n.Spec.Unschedulable || n.Annotations[keyDND] != "true" {
		t.Error("an operator's cordon or do-not-disrupt was touched")
	}

	// claims
	for name, want := range map[string]string{"claim-a": "pending", "claim-b": "failed", "claim-c": "failed", "claim-d": "failed", "claim-e": "expired", "claim-f": ""} {
		if got := w.claim(name).Annotations[keyState]; got != want {
			t.Errorf("%s state %q, want %q", name, got, want)
		}
	}
	if got := w.claim("claim-d").Annotations[keyFailed]; got != "2026-11-29T00:00:00Z" {
		t.Errorf("claim-d's backoff record touched: %q", got)
	}
	if got, want := w.alerts.calls, []string{"claim-b from pending now failed", "claim-c from draining now failed"}; !slices.Equal(got, want) {
		t.Errorf("alerts %q, want %q", got, want)
	}

	// pools
	wantAnn(t, "pool-orphan", w.pool("pool-orphan").Annotations, ann(keyMirror, "", keyDraining, "", keyWait, "", keyMode, "",
		lastRot, "2026-11-01T00:00:00Z", lastFail, "2026-11-02T00:00:00Z", freeze, "2026-12-01T00:00:00Z", window, "2026-11-30T08:00:00Z"))
	wantAnn(t, "pool-a", w.pool("pool-a").Annotations, ann(keyAnchor, "claim-a", keyMirror, "draining", keyDraining, "2026-11-30T09:00:00Z"))

	// exactly this work, each written once
	slices.Sort(w.writes)
	wantWrites := []string{
		"delete Pod/" + ns + "/ph-b", "delete Pod/" + ns + "/ph-gone", "delete Pod/" + ns + "/pp-gone",
		"patch Node/node-b", "patch Node/node-c", "patch Node/node-opdnd", "patch Node/node-x",
		"patch NodeClaim/claim-b", "patch NodeClaim/claim-c",
		"patch NodePool/pool-orphan",
	}
	if !slices.Equal(w.writes, wantWrites) {
		t.Errorf("writes\n%q\nwant\n%q", w.writes, wantWrites)
	}

	// and logs exactly this work
	for _, want := range [][]string{
		{"startup sweep deleted a placeholder no anchor references", `"placeholder"="ph-b"`, `"nodeclaim"="claim-b"`},
		{"startup sweep deleted a placeholder no anchor references", `"placeholder"="ph-gone"`},
		{"startup sweep deleted a pre-pull Pod no anchor references", `"pod"="` + ns + `/pp-gone"`, `"nodeclaim"="claim-gone"`},
		{`"startup sweep unfroze a node no anchor references"`, `"node"="node-b"`},
		{`"startup sweep unfroze a node no anchor references"`, `"node"="node-opdnd"`},
		{`"startup sweep uncordoned a node no anchor references"`, `"node"="node-c"`},
		{`"startup sweep unfroze and uncordoned a node no anchor references"`, `"node"="node-x"`},
		{"startup sweep failed a claim no anchor owns", `"nodeclaim"="claim-b"`, `"from"="pending"`},
		{"startup sweep failed a claim no anchor owns", `"nodeclaim"="claim-c"`, `"from"="draining"`},
		{"startup sweep removed an orphaned active-rotation-state", `"nodepool"="pool-orphan"`},
		{"rotation attempt failed", `"reason"="startupSweep"`, `"nodeclaim"="claim-b"`},
		{"rotation attempt failed", `"reason"="startupSweep"`, `"nodeclaim"="claim-c"`},
	} {
		if got := w.logged(want...); len(got) != 1 {
			t.Errorf("log lines with %q: %q", want, got)
		}
	}
	if len(w.logs) != 12 {
		t.Errorf("%d log lines, want 12 (one per piece of work, and the failure line of each claim failed):\n%s", len(w.logs), strings.Join(w.logs, "\n"))
	}
}

func TestSweepTwiceDoesNothingTheSecondTime(t *testing.T) {
	w := newWorld(t, crashed()...)
	w.run()
	after := w.state()
	w.reset()
	w.run()
	if len(w.writes) != 0 || len(w.logs) != 0 || len(w.alerts.calls) != 0 {
		t.Fatalf("second sweep: writes %v, logs %v, alerts %v", w.writes, w.logs, w.alerts.calls)
	}
	if w.state() != after {
		t.Fatal("second sweep changed the store")
	}
}

func TestSweepOnACleanClusterDoesNothing(t *testing.T) {
	w := newWorld(t,
		mkPool("pool-a", ann(keyAnchor, "claim-a", keyMirror, "draining")),
		mkClaim("claim-a", "node-a", ann(keyState, "draining")),
		mkPod(ns, "ph-a", "claim-a"),
		mkNode("node-a", pair("claim-a"), ann(keyDND, "true", keyOwned, "true", keyCordoned, "true"), true),
	)
	before := w.state()
	w.run()
	if len(w.writes) != 0 || len(w.logs) != 0 || w.state() != before {
		t.Fatalf("writes %v logs %v", w.writes, w.logs)
	}
}

// A node whose claim is anchored keeps even a marker without the pairing
// label; a surge-for label naming an anchored claim keeps the node whatever
// its own claim.
func TestSweepNodeAnchorReferences(t *testing.T) {
	for _, tc := range []struct {
		name string
		node *corev1.Node
		kept bool
		did  string
	}{
		{"own claim anchored, cordon only", mkNode("node-a", nil, ann(keyCordoned, "true"), true), true, ""},
		{"own claim anchored, owned do-not-disrupt only", mkNode("node-a", nil, ann(keyDND, "true", keyOwned, "true"), false), true, ""},
		{"paired with the anchored claim", mkNode("node-z", pair("claim-a"), ann(keyDND, "true", keyOwned, "true"), false), true, ""},
		{"paired with another claim, own claim anchored", mkNode("node-a", pair("claim-old"), ann(keyDND, "true", keyOwned, "true"), false), false, "unfroze"},
		{"own claim unanchored, cordon only", mkNode("node-u", nil, ann(keyCordoned, "true"), true), false, "uncordoned"},
		{"a node with no claim and an owned do-not-disrupt", mkNode("node-v", nil, ann(keyDND, "true", keyOwned, "true"), false), false, "unfroze"},
		{"an empty pairing label", mkNode("node-w", pair(""), nil, false), false, "unfroze"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t,
				mkPool("pool-a", ann(keyAnchor, "claim-a")),
				mkClaim("claim-a", "node-a", ann(keyState, "pending")),
				mkClaim("claim-u", "node-u", nil),
				tc.node,
			)
			before := w.node(tc.node.Name)
			w.run()
			after := w.node(tc.node.Name)
			if kept := after.ResourceVersion == before.ResourceVersion; kept != tc.kept {
				t.Fatalf("kept %v, want %v; writes %v", kept, tc.kept, w.writes)
			}
			if tc.kept {
				if len(w.logs) != 0 {
					t.Fatalf("logged %v", w.logs)
				}
				return
			}
			if len(w.logged(`"startup sweep `+tc.did+` a node no anchor references"`, `"node"="`+tc.node.Name+`"`)) != 1 {
				t.Fatalf("logs %v, want %q", w.logs, tc.did)
			}
			if _, ok := after.Labels[labelPair]; ok || after.Annotations[keyOwned] != "" || after.Annotations[keyCordoned] != "" || after.Spec.Unschedulable {
				t.Fatalf("markers left: %v %v", after.Labels, after.Annotations)
			}
		})
	}
}

// The markers are re-checked on the fresh read the write is validated
// against: what the list showed is only a candidate.
func TestSweepNodeDecidedOnTheFreshRead(t *testing.T) {
	t.Run("reversed meanwhile: nothing written, nothing logged", func(t *testing.T) {
		w := newWorld(t, mkNode("node-b", pair("claim-b"), ann(keyDND, "true", keyOwned, "true"), false))
		w.onGet = func(key client.ObjectKey, kind string) {
			if kind == "Node" && key.Name == "node-b" {
				w.onGet = nil
				n := w.node("node-b")
				n.Labels, n.Annotations = nil, nil
				if err := w.base.Update(ctx, n); err != nil {
					t.Fatal(err)
				}
			}
		}
		w.run()
		if len(w.writes) != 0 || len(w.logs) != 0 {
			t.Fatalf("writes %v logs %v", w.writes, w.logs)
		}
	})
	t.Run("re-paired with an anchored claim meanwhile: kept", func(t *testing.T) {
		w := newWorld(t, mkPool("pool-a", ann(keyAnchor, "claim-a")),
			mkNode("node-b", pair("claim-b"), ann(keyDND, "true", keyOwned, "true"), false))
		w.onGet = func(key client.ObjectKey, kind string) {
			if kind == "Node" && key.Name == "node-b" {
				w.onGet = nil
				n := w.node("node-b")
				n.Labels[labelPair] = "claim-a"
				if err := w.base.Update(ctx, n); err != nil {
					t.Fatal(err)
				}
			}
		}
		w.run()
		n := w.node("node-b")
		if n.Labels[labelPair] != "claim-a" || n.Annotations[keyOwned] != "true" {
			t.Fatalf("the anchored rotation's markers were reversed: %v %v", n.Labels, n.Annotations)
		}
		if len(w.logs) != 0 {
			t.Fatalf("logs %v", w.logs)
		}
	})
}

func TestSweepClaimWriteRacedDoesNotAlert(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *world)
	}{
		{"failed by someone else before the fresh read", func(w *world) {
			w.onGet = func(key client.ObjectKey, kind string) {
				if kind == "NodeClaim" && key.Name == "claim-b" {
					w.onGet = nil
					c := w.claim("claim-b")
					c.Annotations[keyState] = "failed"
					if err := w.base.Update(ctx, c); err != nil {
						t.Fatal(err)
					}
				}
			}
		}},
		{"expired between the fresh read and the write", func(w *world) {
			w.onPatch = func(client.Object) error {
				w.onPatch = nil
				c := w.claim("claim-b")
				c.Annotations[keyState] = "expired"
				if err := w.base.Update(ctx, c); err != nil {
					t.Fatal(err)
				}
				return nil // the patch now meets a stale resourceVersion
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, mkClaim("claim-b", "", ann(keyState, "pending")))
			tc.setup(w)
			w.run()
			if len(w.alerts.calls) != 0 {
				t.Fatalf("alerted %v for a write that raced", w.alerts.calls)
			}
			if len(w.logged("startup sweep failed a claim")) != 0 {
				t.Fatalf("logged %v", w.logs)
			}
			if s := w.claim("claim-b").Annotations[keyState]; s == "pending" {
				t.Fatal("the other writer's state was overwritten")
			}
		})
	}
}

func TestSweepListErrorsAreLoggedNotFatal(t *testing.T) {
	boom := errors.New("apiserver unavailable")
	for _, tc := range []struct {
		kind    string
		logged  []string // error messages expected
		stillOK func(t *testing.T, w *world)
	}{
		{
			kind:   "NodePoolList",
			logged: []string{"startup sweep skipped: cannot list NodePools"},
			stillOK: func(t *testing.T, w *world) {
				if len(w.writes) != 0 {
					t.Fatalf("wrote %v without knowing the anchors", w.writes)
				}
			},
		},
		{
			kind:   "PodList",
			logged: []string{"startup sweep: listing placeholders"},
			stillOK: func(t *testing.T, w *world) {
				if w.claim("claim-b").Annotations[keyState] != "failed" || w.node("node-b").Labels[labelPair] != "" {
					t.Fatal("later phases skipped")
				}
			},
		},
		{
			kind:   "NodeList",
			logged: []string{"startup sweep: listing nodes"},
			stillOK: func(t *testing.T, w *world) {
				if w.podExists(ns, "ph-b") || w.claim("claim-b").Annotations[keyState] != "failed" {
					t.Fatal("other phases skipped")
				}
				if w.node("node-b").Labels[labelPair] != "claim-b" {
					t.Fatal("a node was written without a list")
				}
			},
		},
		{
			kind:   "NodeClaimList",
			logged: []string{"startup sweep: listing NodeClaims"},
			stillOK: func(t *testing.T, w *world) {
				if w.podExists(ns, "ph-b") || w.pool("pool-orphan").Annotations[keyMirror] != "" {
					t.Fatal("other phases skipped")
				}
				// without the claims, a node cannot be shown unanchored
				if w.node("node-b").Labels[labelPair] != "claim-b" || w.claim("claim-b").Annotations[keyState] != "pending" {
					t.Fatal("written without the claims list")
				}
			},
		},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			w := newWorld(t,
				mkPool("pool-orphan", ann(keyMirror, "draining")),
				mkClaim("claim-b", "", ann(keyState, "pending")),
				mkPod(ns, "ph-b", "claim-b"),
				mkNode("node-b", pair("claim-b"), ann(keyDND, "true", keyOwned, "true"), false),
			)
			w.listErr[tc.kind] = boom
			w.run() // must not panic
			for _, msg := range tc.logged {
				if got := w.logged(msg, "apiserver unavailable"); len(got) == 0 {
					t.Errorf("no log line %q with the error: %v", msg, w.logs)
				}
			}
			tc.stillOK(t, w)
		})
	}
}

func TestSweepPerItemErrorsAreLoggedAndSkipped(t *testing.T) {
	w := newWorld(t,
		mkNode("node-1", pair("claim-gone"), ann(keyDND, "true", keyOwned, "true"), false),
		mkNode("node-2", pair("claim-gone"), ann(keyDND, "true", keyOwned, "true"), false),
		mkPod(ns, "ph-1", "claim-gone"),
		mkPod(ns, "ph-2", "claim-gone"),
	)
	w.onPatch = func(obj client.Object) error {
		if obj.GetName() == "node-1" {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "node-1", errors.New("rbac"))
		}
		return nil
	}
	w.onDelete = func(obj client.Object) error {
		if obj.GetName() == "ph-1" {
			return apierrors.NewInternalError(errors.New("etcd"))
		}
		return nil
	}
	w.run()
	if len(w.logged("startup sweep: reversing node markers", `"node"="node-1"`)) != 1 {
		t.Errorf("node error not logged: %v", w.logs)
	}
	if len(w.logged("startup sweep: deleting placeholder", `"placeholder"="ph-1"`)) != 1 {
		t.Errorf("placeholder error not logged: %v", w.logs)
	}
	if w.node("node-2").Labels[labelPair] != "" || w.podExists(ns, "ph-2") {
		t.Error("the items after a failed one were skipped")
	}
	if w.node("node-1").Labels[labelPair] == "" || !w.podExists(ns, "ph-1") {
		t.Error("failed items changed")
	}
	if len(w.logged("unfroze", "node-1")) != 0 || len(w.logged("deleted a placeholder", "ph-1")) != 0 {
		t.Error("logged work that did not happen")
	}
}

// A placeholder that vanished or was replaced (same name, new UID) between
// the list and the delete is neither an error nor work done.
func TestSweepPlaceholderGoneOrReplaced(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace bool
	}{{"gone", false}, {"replaced", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, mkPod(ns, "ph-b", "claim-b"))
			w.onDelete = func(obj client.Object) error {
				w.onDelete = nil
				if err := w.base.Delete(ctx, mkPod(ns, "ph-b", "")); err != nil {
					t.Fatal(err)
				}
				if tc.replace {
					p := mkPod(ns, "ph-b", "claim-b")
					p.UID = "uid-new"
					if err := w.base.Create(ctx, p); err != nil {
						t.Fatal(err)
					}
				}
				return nil
			}
			w.run()
			if len(w.logs) != 0 {
				t.Fatalf("logs %v", w.logs)
			}
			if w.podExists(ns, "ph-b") != tc.replace {
				t.Fatal("the replacement placeholder was deleted")
			}
		})
	}
}

func TestSweepMirrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pool    map[string]string
		want    map[string]string
		written bool
	}{
		{"only the draining mirror", ann(keyMirror, "draining"), ann(keyMirror, ""), true},
		{"only draining-at", ann(keyDraining, "2026-11-30T09:00:00Z"), ann(keyDraining, ""), true},
		{"an empty anchor is no anchor", ann(keyAnchor, "", keyMode, "forceful-fallback"), ann(keyAnchor, "", keyMode, ""), true},
		{"anchored: kept", ann(keyAnchor, "claim-z", keyMirror, "draining"), ann(keyAnchor, "claim-z", keyMirror, "draining"), false},
		{"nothing scoped: not written", ann(lastRot, "2026-11-01T00:00:00Z", window, "2026-11-30T00:00:00Z"), ann(lastRot, "2026-11-01T00:00:00Z", window, "2026-11-30T00:00:00Z"), false},
		{"no annotations", nil, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, mkPool("p", tc.pool))
			w.run()
			wantAnn(t, "pool", w.pool("p").Annotations, tc.want)
			if written := len(w.writes) == 1; written != tc.written || len(w.writes) > 1 {
				t.Fatalf("writes %v", w.writes)
			}
			if got := len(w.logged("startup sweep removed an orphaned active-rotation-state")); (got == 1) != tc.written {
				t.Fatalf("logs %v", w.logs)
			}
		})
	}
}

// An anchor written between the sweep's list and its fresh read keeps the
// pool's rotation-scoped keys.
func TestSweepMirrorAnchoredMeanwhile(t *testing.T) {
	w := newWorld(t, mkPool("p", ann(keyMirror, "draining", keyMode, "forceful-fallback")))
	w.onGet = func(key client.ObjectKey, kind string) {
		if kind == "NodePool" {
			w.onGet = nil
			np := w.pool("p")
			np.Annotations[keyAnchor] = "claim-new"
			if err := w.base.Update(ctx, np); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.run()
	wantAnn(t, "pool", w.pool("p").Annotations, ann(keyAnchor, "claim-new", keyMirror, "draining", keyMode, "forceful-fallback"))
	if len(w.logs) != 0 {
		t.Fatalf("logs %v", w.logs)
	}
}

// The mirrors phase lists the pools a second time; its List failing skips
// that phase only. (It is not logged today: see the report of the tests'
// author. This test pins only what holds: no panic, no write, the other
// phases done.)
func TestSweepMirrorsListErrorSkipsOnlyThatPhase(t *testing.T) {
	w := newWorld(t,
		mkPool("pool-orphan", ann(keyMirror, "draining")),
		mkClaim("claim-b", "", ann(keyState, "pending")),
	)
	pools := 0
	w.onList = func(kind string) error {
		if kind == "NodePoolList" {
			if pools++; pools == 2 {
				return errors.New("apiserver unavailable")
			}
		}
		return nil
	}
	w.run()
	if pools != 2 {
		t.Fatalf("%d NodePool lists, want 2 (anchors, mirrors)", pools)
	}
	if w.pool("pool-orphan").Annotations[keyMirror] != "draining" {
		t.Fatal("the mirror was removed without a list")
	}
	if w.claim("claim-b").Annotations[keyState] != "failed" {
		t.Fatal("the claims phase did not run")
	}
}

// The sweep's failure write is a real failure write: failed-at now,
// retry-count + 1, started-at and surge-claim cleared — so the claim waits
// out its backoff and becomes a candidate again, instead of being skipped
// forever for a missing failed-at (found on a real cluster).
func TestSweepFailureWriteIsARealFailureRecord(t *testing.T) {
	w := newWorld(t,
		mkClaim("claim-p", "", ann(keyState, "pending", "noderotation.io/started-at", "2026-11-30T08:00:00Z", "noderotation.io/surge-claim", "claim-s")),
		mkClaim("claim-r", "", ann(keyState, "draining", "noderotation.io/retry-count", "2")),
		mkClaim("claim-g", "", ann(keyState, "pending", "noderotation.io/retry-count", "garbage")),
	)
	w.s.Clock = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) }
	w.run()
	for name, want := range map[string]map[string]string{
		"claim-p": ann(keyState, "failed", keyFailed, "2026-11-30T12:00:00Z", "noderotation.io/retry-count", "1", "noderotation.io/started-at", "", "noderotation.io/surge-claim", ""),
		"claim-r": ann(keyState, "failed", keyFailed, "2026-11-30T12:00:00Z", "noderotation.io/retry-count", "3"),
		"claim-g": ann(keyState, "failed", keyFailed, "2026-11-30T12:00:00Z", "noderotation.io/retry-count", "1"),
	} {
		wantAnn(t, name, w.claim(name).Annotations, want)
	}
}

// Another instance may start a rotation right after this sweep captured
// the anchors: every write re-reads the owning pool's anchor, so the new
// rotation's claim, placeholder and node are left alone.
func TestSweepLeavesARotationStartedAfterItsSnapshot(t *testing.T) {
	pool := func(name string) map[string]string { return map[string]string{"karpenter.sh/nodepool": name} }
	claim := mkClaim("claim-x", "node-x", ann(keyState, "pending"))
	claim.Labels = pool("pool-x")
	ph := mkPod(ns, "ph-x", "claim-x")
	ph.Labels[v1alpha1.LabelNodePool] = "pool-x"
	node := mkNode("node-x", map[string]string{v1alpha1.LabelSurgeFor: "claim-x", "karpenter.sh/nodepool": "pool-x"}, ann(keyDND, "true", keyOwned, "true"), false)
	w := newWorld(t, mkPool("pool-x", nil), claim, ph, node)
	started := false
	w.onList = func(kind string) error {
		if kind == "PodList" && !started { // the anchors are captured: now the other instance starts
			started = true
			np := &karpv1.NodePool{}
			if err := w.base.Get(ctx, client.ObjectKey{Name: "pool-x"}, np); err != nil {
				t.Fatal(err)
			}
			np.Annotations = ann(keyAnchor, "claim-x")
			if err := w.base.Update(ctx, np); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}
	w.run()
	if !started {
		t.Fatal("the sweep listed no Pods")
	}
	if !w.podExists(ns, "ph-x") || w.claim("claim-x").Annotations[keyState] != "pending" || w.node("node-x").Labels[labelPair] != "claim-x" {
		t.Errorf("the rotation started after the snapshot was swept: writes %v", w.writes)
	}
	if len(w.alerts.calls) != 0 {
		t.Errorf("alerts %v", w.alerts.calls)
	}
}

// Every slot's anchor protects its rotation (docs/design.md#throughput): a
// claim anchored in slot 2 and its placeholder are left alone, while a
// slot without an anchor loses its leftover mirror and slot 1 keeps its
// own.
func TestSweepKeepsEverySlotsRotation(t *testing.T) {
	s2, s3 := v1alpha1.Slot(2).Key, v1alpha1.Slot(3).Key
	w := newWorld(t,
		mkPool("general", ann(
			v1alpha1.AnnotationActiveRotation, "general-a", v1alpha1.AnnotationActiveRotationState, "pending",
			s2(v1alpha1.AnnotationActiveRotation), "general-b", s2(v1alpha1.AnnotationActiveRotationState), "draining",
			s3(v1alpha1.AnnotationActiveRotationState), "draining", s3(v1alpha1.AnnotationLastRotationAt), "2026-11-01T00:00:00Z")),
		mkClaim("general-a", "node-a", ann(v1alpha1.AnnotationState, "pending")),
		mkClaim("general-b", "node-b", ann(v1alpha1.AnnotationState, "draining")),
		mkPod(ns, "nrc-surge-general-b", "general-b"))
	w.run()
	for _, c := range []string{"general-a", "general-b"} {
		if st := w.claim(c).Annotations[v1alpha1.AnnotationState]; st == v1alpha1.StateFailed {
			t.Errorf("%s, anchored in a slot, was failed", c)
		}
	}
	if !w.podExists(ns, "nrc-surge-general-b") {
		t.Error("slot 2's placeholder was deleted")
	}
	wantAnn(t, "pool", w.pool("general").Annotations, ann(
		v1alpha1.AnnotationActiveRotationState, "pending", s2(v1alpha1.AnnotationActiveRotationState), "draining",
		s3(v1alpha1.AnnotationActiveRotationState), "", s3(v1alpha1.AnnotationLastRotationAt), "2026-11-01T00:00:00Z"))
}

// With usePullSecrets a rotation's pre-pull Pods live in the moving Pods'
// namespaces too: the sweep looks for them there, and still only for
// Pods labelled as pre-pull Pods.
func TestSweepFindsPrePullPodsInEveryNamespaceWhenTheyMayBeThere(t *testing.T) {
	w := newWorld(t, crashed()...)
	w.s.PrePullEverywhere = true
	w.run()
	if w.podExists("default", "pp-not-ours") {
		t.Error("a pre-pull Pod no anchor references, in another namespace, was left")
	}
	if !w.podExists("default", "not-ours") || !w.podExists(ns, "pp-a") {
		t.Error("a placeholder outside the namespace, or an anchored rotation's pre-pull Pod, was deleted")
	}
	if got := w.logged("startup sweep deleted a pre-pull Pod no anchor references", `"pod"="default/pp-not-ours"`); len(got) != 1 {
		t.Errorf("log lines %q", got)
	}
}
