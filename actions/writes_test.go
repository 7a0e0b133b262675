package actions

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// condCase is one conditional-write action in the three worlds a fresh
// read can show it: its precondition holds (claimed), it does not (raced),
// its target is gone.
type condCase struct {
	name   string
	action string
	args   map[string]any
	// claimed: a world in which the precondition holds; check verifies the
	// write landed there.
	claimed []client.Object
	check   func(t *testing.T, e *env)
	// raced: a world in which it does not hold.
	raced []client.Object
	// steal is another writer making the precondition fail.
	steal func(t *testing.T, c client.Client)
	// node: the action writes the old node (cordon, uncordon).
	node bool
}

// unobserved is t as a pass that holds no lockable copy of its targets:
// the pool and the node without a resourceVersion, no claim.
func unobserved(t Targets) Targets {
	np := t.Pool.DeepCopy()
	np.ResourceVersion = ""
	t.Pool = np
	t.ClaimObject = nil
	if t.OldNode != nil {
		n := t.OldNode.DeepCopy()
		n.ResourceVersion = ""
		t.OldNode = n
	}
	return t
}

func (cc condCase) targets(e *env) Targets {
	t := e.targets()
	if cc.node && t.OldNode == nil {
		t.OldNode = mkNode(oldNode, nil, nil, false)
	}
	return t
}

func setPoolAnn(key, value string) func(t *testing.T, c client.Client) {
	return func(t *testing.T, c client.Client) {
		update(t, c, mkPool(poolName, nil), func(np *karpv1.NodePool) {
			if value == "" {
				delete(np.Annotations, key)
				return
			}
			if np.Annotations == nil {
				np.Annotations = map[string]string{}
			}
			np.Annotations[key] = value
		})
	}
}

var condCases = []condCase{
	{
		name: "anchor-write surge", action: "anchor-write", args: map[string]any{"mode": "surge"},
		// a stale mirror of an earlier rotation must not survive into this one
		claimed: []client.Object{mkPool(poolName, ann(keyMirror, "draining", keyDraining, "2026-11-01T00:00:00Z", keySurgeWait, "3m0s", keyMode, "forceful-fallback", keyLastRot, "2026-11-01T01:00:00Z"))},
		check: func(t *testing.T, e *env) {
			wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, claimA, keyMirror, "pending", keyDraining, "", keySurgeWait, "", keyMode, "", keyLastRot, "2026-11-01T01:00:00Z"))
		},
		raced: []client.Object{mkPool(poolName, ann(keyAnchor, "claim-other"))},
		steal: setPoolAnn(keyAnchor, "claim-other"),
	},
	{
		name: "anchor-write forcefulFallback", action: "anchor-write", args: map[string]any{"mode": "forcefulFallback"},
		claimed: []client.Object{mkPool(poolName, nil)},
		check: func(t *testing.T, e *env) {
			wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, claimA, keyMode, "forceful-fallback", keyMirror, "draining", keyDraining, nowStamp))
		},
		raced: []client.Object{mkPool(poolName, ann(keyAnchor, "claim-other"))},
		steal: setPoolAnn(keyAnchor, "claim-other"),
	},
	{
		name: "anchor-release", action: "anchor-release",
		claimed: []client.Object{mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "draining", keyDraining, "2026-11-30T09:00:00Z"))},
		check: func(t *testing.T, e *env) {
			wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, "", keyMirror, "", keyDraining, "", keyLastRot, nowStamp))
		},
		raced: []client.Object{mkPool(poolName, ann(keyAnchor, "claim-other", keyMirror, "draining"))},
		steal: setPoolAnn(keyAnchor, ""),
	},
	{
		name: "anchor-clear", action: "anchor-clear", args: map[string]any{"lastFailureAt": "now"},
		claimed: []client.Object{mkPool(poolName, ann(keyAnchor, claimA, keyMode, "forceful-fallback"))},
		check: func(t *testing.T, e *env) {
			wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, "", keyMode, "", keyLastFail, nowStamp))
		},
		raced: []client.Object{mkPool(poolName, ann(keyAnchor, "claim-other"))},
		steal: setPoolAnn(keyAnchor, "claim-other"),
	},
	{
		name: "pool-mirror", action: "pool-mirror", args: map[string]any{"drainingAt": true},
		claimed: []client.Object{mkPool(poolName, ann(keyAnchor, claimA))},
		check: func(t *testing.T, e *env) {
			wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, claimA, keyMirror, "draining", keyDraining, nowStamp))
		},
		// released by another pass: a mirror now would be an orphan
		raced: []client.Object{mkPool(poolName, nil)},
		steal: setPoolAnn(keyAnchor, ""),
	},
	{
		name: "claim-state", action: "claim-state", args: map[string]any{"from": []any{"pending"}, "to": "draining"},
		claimed: []client.Object{mkClaim(claimA, ann(keyState, "pending"))},
		check: func(t *testing.T, e *env) {
			wantAnn(t, "claim", e.claim(claimA).Annotations, ann(keyState, "draining"))
		},
		raced: []client.Object{mkClaim(claimA, ann(keyState, "failed"))},
		steal: func(t *testing.T, c client.Client) {
			update(t, c, mkClaim(claimA, nil), func(nc *karpv1.NodeClaim) { nc.Annotations[keyState] = "failed" })
		},
	},
	{
		name: "cordon", action: "cordon", node: true,
		claimed: []client.Object{mkNode(oldNode, nil, nil, false)},
		check: func(t *testing.T, e *env) {
			n := e.node(oldNode)
			if !n.Spec.Unschedulable {
				t.Error("node not cordoned")
			}
			wantAnn(t, "node", n.Annotations, ann(keyCordoned, "true"))
		},
		// an operator's cordon
		raced: []client.Object{mkNode(oldNode, nil, nil, true)},
		steal: func(t *testing.T, c client.Client) {
			update(t, c, mkNode(oldNode, nil, nil, false), func(n *corev1.Node) { n.Spec.Unschedulable = true })
		},
	},
	{
		name: "uncordon", action: "uncordon", node: true,
		claimed: []client.Object{mkNode(oldNode, nil, ann(keyCordoned, "true"), true)},
		check: func(t *testing.T, e *env) {
			n := e.node(oldNode)
			if n.Spec.Unschedulable {
				t.Error("node still cordoned")
			}
			wantAnn(t, "node", n.Annotations, ann(keyCordoned, ""))
		},
		raced: []client.Object{mkNode(oldNode, nil, nil, true)},
		steal: func(t *testing.T, c client.Client) {
			update(t, c, mkNode(oldNode, nil, nil, false), func(n *corev1.Node) { delete(n.Annotations, keyCordoned) })
		},
	},
	{
		name: "window-stamp", action: "window-stamp",
		claimed: []client.Object{mkPool(poolName, nil)},
		check: func(t *testing.T, e *env) {
			wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyWindow, nowStamp))
		},
		raced: []client.Object{mkPool(poolName, ann(keyWindow, "2026-11-30T08:00:00Z"))},
		steal: setPoolAnn(keyWindow, "2026-11-30T09:00:00Z"),
	},
	{
		name: "window-clear", action: "window-clear",
		claimed: []client.Object{mkPool(poolName, ann(keyWindow, "2026-11-30T08:00:00Z"))},
		check: func(t *testing.T, e *env) {
			wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyWindow, ""))
		},
		raced: []client.Object{mkPool(poolName, nil)},
		// a new occurrence stamped after this pass read the old one
		steal: setPoolAnn(keyWindow, "2026-11-30T09:30:00Z"),
	},
}

func TestConditionalWriteActions(t *testing.T) {
	for _, cc := range condCases {
		t.Run(cc.name, func(t *testing.T) {
			t.Run("claimed", func(t *testing.T) {
				e := newEnv(t, cc.claimed...)
				res, err := step(e.pass(cc.targets(e)), cc.action, cc.args)
				if err != nil {
					t.Fatal(err)
				}
				if got := outcome(res); got != Claimed {
					t.Fatalf("outcome %q (%s), want claimed", got, res.Did)
				}
				cc.check(t, e)
				if len(e.writes) != 1 || !strings.HasPrefix(e.writes[0], "patch ") {
					t.Fatalf("writes %v, want one patch", e.writes)
				}
				if !strings.Contains(e.bodies[0], `"resourceVersion":"999"`) {
					t.Errorf("patch %s carries no resourceVersion precondition", e.bodies[0])
				}
				if e.gets != 0 {
					t.Errorf("%d fresh reads: an observed target is written from its copy", e.gets)
				}
			})
			t.Run("raced", func(t *testing.T) {
				e := newEnv(t, cc.raced...)
				before := e.state()
				res, err := step(e.pass(cc.targets(e)), cc.action, cc.args)
				if err != nil {
					t.Fatal(err)
				}
				if got := outcome(res); got != Raced {
					t.Fatalf("outcome %q (%s), want raced", got, res.Did)
				}
				if len(e.writes) != 0 || e.state() != before {
					t.Fatalf("a raced write wrote: %v", e.writes)
				}
			})
			t.Run("gone", func(t *testing.T) {
				e := newEnv(t)
				res, err := step(e.pass(cc.targets(e)), cc.action, cc.args)
				if err != nil {
					t.Fatal(err)
				}
				if got := outcome(res); got != Gone {
					t.Fatalf("outcome %q (%s), want gone", got, res.Did)
				}
				if len(e.writes) != 0 {
					t.Fatalf("writes %v on a gone target", e.writes)
				}
			})
			t.Run("gone at the patch", func(t *testing.T) {
				e := newEnv(t, cc.claimed...)
				e.onPatch = func(obj client.Object, _ client.Patch) error {
					return apierrors.NewNotFound(schema.GroupResource{Resource: "objects"}, obj.GetName())
				}
				res, err := step(e.pass(cc.targets(e)), cc.action, cc.args)
				if err != nil {
					t.Fatal(err)
				}
				if got := outcome(res); got != Gone {
					t.Fatalf("outcome %q (%s), want gone", got, res.Did)
				}
			})
			t.Run("a conflict is stale: nothing read, the pass stops", func(t *testing.T) {
				e := newEnv(t, cc.claimed...)
				before := e.state()
				e.conflicts(1)
				p := e.pass(cc.targets(e))
				res, err := step(p, cc.action, cc.args)
				if err != nil {
					t.Fatal(err)
				}
				if got := outcome(res); got != Stale || !p.stale {
					t.Fatalf("outcome %q (%s), stale pass %v; want stale", got, res.Did, p.stale)
				}
				if e.gets != 0 || len(e.writes) != 1 || e.state() != before {
					t.Fatalf("%d fresh reads, writes %v; want none and one refused patch", e.gets, e.writes)
				}
			})
			t.Run("another writer first: stale, its write kept", func(t *testing.T) {
				e := newEnv(t, cc.claimed...)
				var stolen string
				e.beforeFirstPatch(func(c client.Client) {
					cc.steal(t, c)
					stolen = e.state()
				})
				res, err := step(e.pass(cc.targets(e)), cc.action, cc.args)
				if err != nil {
					t.Fatal(err)
				}
				if got := outcome(res); got != Stale {
					t.Fatalf("outcome %q (%s), want stale: the write landed over another writer's", got, res.Did)
				}
				if e.state() != stolen {
					t.Fatalf("the other writer's state was overwritten:\n%s\nwant\n%s", e.state(), stolen)
				}
				if e.gets != 0 {
					t.Fatalf("%d fresh reads, want 0", e.gets)
				}
			})
			t.Run("a target the pass never observed is validated on a fresh read", func(t *testing.T) {
				e := newEnv(t, cc.claimed...)
				res, err := step(e.pass(unobserved(cc.targets(e))), cc.action, cc.args)
				if err != nil {
					t.Fatal(err)
				}
				if got := outcome(res); got != Claimed || e.gets != 1 {
					t.Fatalf("outcome %q (%s) after %d fresh reads, want claimed after 1", got, res.Did, e.gets)
				}
				cc.check(t, e)
			})
			t.Run("read error", func(t *testing.T) {
				e := newEnv(t, cc.claimed...)
				e.onGet = func(client.ObjectKey, client.Object) error { return errors.New("etcd unavailable") }
				_, err := step(e.pass(unobserved(cc.targets(e))), cc.action, cc.args)
				if err == nil || !strings.Contains(err.Error(), "etcd unavailable") {
					t.Fatalf("error %v, want the read error", err)
				}
				if len(e.writes) != 0 {
					t.Fatalf("writes %v after a failed read", e.writes)
				}
			})
			t.Run("idempotent", func(t *testing.T) {
				e := newEnv(t, cc.claimed...)
				targets := cc.targets(e)
				if _, err := step(e.pass(targets), cc.action, cc.args); err != nil {
					t.Fatal(err)
				}
				after := e.state()
				e.resetLog()
				// a retried pass on the same observation: its copy is behind
				// the first run's write (stale), or the first run wrote nothing
				res, err := step(e.pass(targets), cc.action, cc.args)
				if err != nil {
					t.Fatal(err)
				}
				if got := outcome(res); got != Stale && got != Claimed && got != Raced {
					t.Fatalf("second run: %q (%s)", got, res.Did)
				}
				if e.state() != after {
					t.Fatalf("second run wrote %v", e.writes)
				}
				// a pass on a cache that caught up: nothing left to write
				e.resetLog()
				res, err = step(e.pass(cc.targets(e)), cc.action, cc.args)
				if err != nil {
					t.Fatal(err)
				}
				if got := outcome(res); got != Claimed && got != Raced {
					t.Fatalf("third run: %q (%s)", got, res.Did)
				}
				if len(e.writes) != 0 || e.state() != after {
					t.Fatalf("third run wrote %v", e.writes)
				}
			})
		})
	}
}
