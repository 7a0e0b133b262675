package actions

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

func TestClaimState(t *testing.T) {
	const old = "2026-11-29T08:00:00Z"
	for _, tc := range []struct {
		name  string
		claim map[string]string // nil: no annotations at all
		args  map[string]any
		out   Outcome
		want  map[string]string // the claim's annotations after ("" absent)
		// unservable is Karpenter's word the pass observed (Targets).
		unservable string
	}{
		{
			name: "from none (absent) to pending", claim: nil,
			args: map[string]any{"from": []any{"none", "pending"}, "to": "pending", "stampStartedAtOnce": true},
			out:  Claimed, want: ann(keyState, "pending", keyStarted, nowStamp),
		},
		{
			name: "pending to pending keeps started-at", claim: ann(keyState, "pending", keyStarted, old),
			args: map[string]any{"from": []any{"none", "pending"}, "to": "pending", "stampStartedAtOnce": true},
			out:  Claimed, want: ann(keyState, "pending", keyStarted, old),
		},
		{
			name: "a pre-state outside from is raced", claim: ann(keyState, "failed", keyFailed, old),
			args: map[string]any{"from": []any{"none", "pending"}, "to": "pending", "stampStartedAtOnce": true},
			out:  Raced, want: ann(keyState, "failed", keyStarted, "", keyFailed, old),
		},
		{
			name: "absent state is none, not in from [pending]", claim: ann("other", "x"),
			args: map[string]any{"from": []any{"pending"}, "to": "draining"},
			out:  Raced, want: ann(keyState, ""),
		},
		{
			name: "without from: unconditional", claim: ann(keyState, "failed"),
			args: map[string]any{"to": "draining"},
			out:  Claimed, want: ann(keyState, "draining"),
		},
		{
			name: "to none removes the key", claim: ann(keyState, "draining", "other", "kept"),
			args: map[string]any{"from": []any{"draining"}, "to": "none"},
			out:  Claimed, want: ann(keyState, "", "other", "kept"),
		},
		{
			name:  "failure: failed-at stamped, retry absent → 1, keys cleared",
			claim: ann(keyState, "pending", keyStarted, old, keySurge, "claim-surge", keyFailed, old),
			args: map[string]any{"from": []any{"pending"}, "to": "failed", "stampFailedAt": true, "incrementRetry": true,
				"clear": []any{"startedAt", "surgeClaim"}},
			out: Claimed, want: ann(keyState, "failed", keyFailed, nowStamp, keyRetry, "1", keyStarted, "", keySurge, ""),
		},
		{
			name: "a readyTimeout failure records Timeout", claim: ann(keyState, "pending"),
			args: map[string]any{"from": []any{"pending"}, "to": "failed", "incrementRetry": true, "failureReason": "timeout"},
			out:  Claimed, want: ann(keyRetry, "1", keyReason, "Timeout"),
		},
		{
			name: "a failure ends the attempt an operator's rotate-next asked for", claim: ann(keyState, "pending", keyRotateNext, "true"),
			args: map[string]any{"from": []any{"pending"}, "to": "failed", "incrementRetry": true, "failureReason": "timeout"},
			out:  Claimed, want: ann(keyRotateNext, "", keyReason, "Timeout"),
		},
		{
			name: "a fail-fast records Karpenter's word over an earlier reason", claim: ann(keyState, "pending", keyReason, "Timeout"),
			args:       map[string]any{"from": []any{"pending"}, "to": "failed", "incrementRetry": true, "failureReason": "unservable"},
			unservable: "LaunchFailed",
			out:        Claimed, want: ann(keyRetry, "1", keyReason, "LaunchFailed"),
		},
		{
			name: "without failureReason the record is kept", claim: ann(keyState, "failed", keyReason, "Unschedulable"),
			args: map[string]any{"from": []any{"failed"}, "to": "pending"},
			out:  Claimed, want: ann(keyState, "pending", keyReason, "Unschedulable"),
		},
		{
			name: "retry 2 → 3", claim: ann(keyState, "pending", keyRetry, "2"),
			args: map[string]any{"from": []any{"pending"}, "to": "failed", "incrementRetry": true},
			out:  Claimed, want: ann(keyRetry, "3", keyFailed, ""),
		},
		{
			name: "retry garbage → 1", claim: ann(keyState, "pending", keyRetry, "lots"),
			args: map[string]any{"from": []any{"pending"}, "to": "failed", "incrementRetry": true},
			out:  Claimed, want: ann(keyRetry, "1"),
		},
		{
			name: "retry negative → 1", claim: ann(keyState, "pending", keyRetry, "-4"),
			args: map[string]any{"from": []any{"pending"}, "to": "failed", "incrementRetry": true},
			out:  Claimed, want: ann(keyRetry, "1"),
		},
		{
			name: "clear one key only", claim: ann(keyState, "pending", keyStarted, old, keySurge, "claim-surge"),
			args: map[string]any{"to": "expired", "clear": []any{"surgeClaim"}},
			out:  Claimed, want: ann(keyState, "expired", keyStarted, old, keySurge, ""),
		},
		{
			name: "a retry does not touch the backoff record", claim: ann(keyState, "failed", keyFailed, old, keyRetry, "2"),
			args: map[string]any{"from": []any{"failed"}, "to": "pending"},
			out:  Claimed, want: ann(keyState, "pending", keyFailed, old, keyRetry, "2", keyStarted, ""),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mkClaim(claimA, tc.claim))
			tg := e.targets()
			tg.UnservableReason = tc.unservable
			res, err := step(e.pass(tg), "claim-state", tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tc.out {
				t.Fatalf("outcome %s (%s), want %s", res.Outcome, res.Did, tc.out)
			}
			got := e.claim(claimA).Annotations
			wantAnn(t, "claim", got, tc.want)
			// The failure record: only a claimed failure write (one that
			// stamps failed-at) reports one, and it is what it wrote.
			if tc.out != Claimed || tc.args["stampFailedAt"] != true {
				if res.Failure != nil {
					t.Fatalf("reported a failure record %+v: only a claimed failure write does", res.Failure)
				}
				return
			}
			want := Failure{Reason: got[keyReason], FailedAt: got[keyFailed], RetryCount: got[keyRetry]}
			if res.Failure == nil || *res.Failure != want {
				t.Errorf("failure record %+v, want %+v (the annotations written)", res.Failure, want)
			}
		})
	}
}

// A later step of the same pass reads the claim as the earlier step wrote
// it, not as observed: the RotationFailed announcement reads the new
// retry-count, anchor-clear max the new failed-at.
func TestClaimStateValuesFeedLaterSteps(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyLastFail, "2026-11-01T00:00:00Z")),
		mkClaim(claimA, ann(keyState, "pending", keyRetry, "1", keyFailed, "2026-11-02T00:00:00Z")))
	p := e.pass(e.targets())
	if _, err := step(p, "claim-state", map[string]any{"from": []any{"pending"}, "to": "failed", "stampFailedAt": true, "incrementRetry": true}); err != nil {
		t.Fatal(err)
	}
	if got := p.claimAnnotation(keyRetry); got != "2" {
		t.Fatalf("retry-count as the pass sees it: %q, want 2", got)
	}
	if _, err := step(p, "anchor-clear", map[string]any{"lastFailureAt": "max"}); err != nil {
		t.Fatal(err)
	}
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyLastFail, nowStamp, keyAnchor, ""))
}

func TestClaimStateIdempotent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		claim  map[string]string
		args   map[string]any
		second Outcome
	}{
		{"entry claim", nil, map[string]any{"from": []any{"none", "pending"}, "to": "pending", "stampStartedAtOnce": true}, Claimed},
		{"failure write", ann(keyState, "pending"), map[string]any{"from": []any{"pending"}, "to": "failed", "stampFailedAt": true, "incrementRetry": true, "clear": []any{"startedAt"}}, Raced},
		{"unconditional", ann(keyState, "failed"), map[string]any{"to": "draining"}, Claimed},
		{"to none", ann(keyState, "draining"), map[string]any{"from": []any{"draining"}, "to": "none"}, Raced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mkClaim(claimA, tc.claim))
			targets := e.targets()
			if res, err := step(e.pass(targets), "claim-state", tc.args); err != nil || res.Outcome != Claimed {
				t.Fatalf("first run: %s %v", res.Outcome, err)
			}
			after := e.state()
			e.resetLog()
			// the same observation again: behind the first run's write
			if res, err := step(e.pass(targets), "claim-state", tc.args); err != nil || res.Outcome != Stale || e.state() != after {
				t.Fatalf("again on the same observation: %s %v, want stale and nothing changed", res.Outcome, err)
			}
			e.resetLog()
			res, err := step(e.pass(e.targets()), "claim-state", tc.args)
			if err != nil || res.Outcome != tc.second {
				t.Fatalf("second run: %s %v, want %s", res.Outcome, err, tc.second)
			}
			if len(e.writes) != 0 || e.state() != after {
				t.Fatalf("second run wrote %v (retry-count counted twice?)", e.writes)
			}
		})
	}
}

func TestClaimDelete(t *testing.T) {
	t.Run("deletes with the observed UID", func(t *testing.T) {
		e := newEnv(t, mkClaim(claimA, nil))
		res, err := step(e.pass(e.targets()), "claim-delete", nil)
		if err != nil || res.Outcome != Done {
			t.Fatalf("%s %v", res.Outcome, err)
		}
		if e.exists(mkClaim(claimA, nil)) {
			t.Fatal("claim not deleted")
		}
		// and again: gone is done
		e.resetLog()
		if res, err := step(e.pass(e.targets()), "claim-delete", nil); err != nil || res.Did != "claim already gone" || len(e.writes) != 0 {
			t.Fatalf("second run: %q %v writes %v", res.Did, err, e.writes)
		}
	})
	t.Run("a recreated claim of the same name is not deleted", func(t *testing.T) {
		e := newEnv(t, mkClaim(claimA, nil))
		targets := e.targets()
		observed := targets.ClaimObject.DeepCopy()
		// the observed claim went away and a new one took its name
		if err := e.base.Delete(ctxb, mkClaim(claimA, nil)); err != nil {
			t.Fatal(err)
		}
		recreated := mkClaim(claimA, nil)
		recreated.UID = "uid-recreated"
		if err := e.base.Create(ctxb, recreated); err != nil {
			t.Fatal(err)
		}
		targets.ClaimObject = observed
		res, err := step(e.pass(targets), "claim-delete", nil)
		if err != nil || res.Outcome != Stale {
			t.Fatalf("%s %v, want stale: the UID precondition fails", res.Outcome, err)
		}
		if !e.exists(recreated) || e.claim(claimA).UID != "uid-recreated" {
			t.Fatal("the recreated claim was deleted")
		}
	})
	t.Run("already deleting: no second delete", func(t *testing.T) {
		c := mkClaim(claimA, nil)
		c.Finalizers = []string{"karpenter.sh/termination"}
		e := newEnv(t, c)
		targets := e.targets()
		targets.ClaimObject.DeletionTimestamp = &metav1.Time{Time: now}
		res, err := step(e.pass(targets), "claim-delete", nil)
		if err != nil || res.Did != "claim already deleting" {
			t.Fatalf("%q %v", res.Did, err)
		}
		if len(e.writes) != 0 {
			t.Fatalf("writes %v", e.writes)
		}
	})
	t.Run("a claim with a finalizer starts deleting", func(t *testing.T) {
		c := mkClaim(claimA, nil)
		c.Finalizers = []string{"karpenter.sh/termination"}
		e := newEnv(t, c)
		if _, err := step(e.pass(e.targets()), "claim-delete", nil); err != nil {
			t.Fatal(err)
		}
		if e.claim(claimA).DeletionTimestamp == nil {
			t.Fatal("no deletionTimestamp: the delete did not reach the store")
		}
	})
	t.Run("gone between observation and delete", func(t *testing.T) {
		e := newEnv(t, mkClaim(claimA, nil))
		targets := e.targets()
		if err := e.base.Delete(ctxb, mkClaim(claimA, nil)); err != nil {
			t.Fatal(err)
		}
		if res, err := step(e.pass(targets), "claim-delete", nil); err != nil || res.Outcome != Done {
			t.Fatalf("%s %v", res.Outcome, err)
		}
	})
	t.Run("an API error is returned", func(t *testing.T) {
		e := newEnv(t, mkClaim(claimA, nil))
		e.onDelete = func(client.Object) error { return apierrors.NewInternalError(errors.New("boom")) }
		_, err := step(e.pass(e.targets()), "claim-delete", nil)
		if err == nil || !strings.Contains(err.Error(), "deleting NodeClaim "+claimA) {
			t.Fatalf("error %v", err)
		}
	})
}

func TestSurgeClaimPersist(t *testing.T) {
	host := mkClaim("claim-surge", nil)
	t.Run("records the surge host's claim, once", func(t *testing.T) {
		e := newEnv(t, mkClaim(claimA, ann(keyState, "pending")))
		targets := e.targets()
		targets.SurgeHostClaim = host
		if _, err := step(e.pass(targets), "surge-claim-persist", nil); err != nil {
			t.Fatal(err)
		}
		wantAnn(t, "claim", e.claim(claimA).Annotations, ann(keySurge, "claim-surge", keyState, "pending"))
		after := e.state()
		e.resetLog()
		// a pass that observed it recorded writes nothing
		targets = e.targets()
		targets.SurgeHostClaim = host
		if res, err := step(e.pass(targets), "surge-claim-persist", nil); err != nil || res.Did != "surge claim unchanged" {
			t.Fatalf("%q %v", res.Did, err)
		}
		if len(e.writes) != 0 || e.state() != after {
			t.Fatalf("writes %v", e.writes)
		}
	})
	t.Run("a retried pass on the stale observation", func(t *testing.T) {
		e := newEnv(t, mkClaim(claimA, nil))
		targets := e.targets()
		targets.SurgeHostClaim = host
		for range 2 {
			if _, err := step(e.pass(targets), "surge-claim-persist", nil); err != nil {
				t.Fatal(err)
			}
		}
		wantAnn(t, "claim", e.claim(claimA).Annotations, ann(keySurge, "claim-surge"))
	})
	t.Run("a different surge host replaces the record", func(t *testing.T) {
		e := newEnv(t, mkClaim(claimA, ann(keySurge, "claim-earlier")))
		targets := e.targets()
		targets.SurgeHostClaim = host
		if _, err := step(e.pass(targets), "surge-claim-persist", nil); err != nil {
			t.Fatal(err)
		}
		wantAnn(t, "claim", e.claim(claimA).Annotations, ann(keySurge, "claim-surge"))
	})
	t.Run("nothing to record", func(t *testing.T) {
		e := newEnv(t, mkClaim(claimA, nil))
		targets := e.targets()
		if _, err := step(e.pass(targets), "surge-claim-persist", nil); err != nil {
			t.Fatal(err)
		}
		targets.SurgeHostClaim, targets.ClaimObject = host, nil
		if _, err := step(e.pass(targets), "surge-claim-persist", nil); err != nil {
			t.Fatal(err)
		}
		if len(e.writes) != 0 {
			t.Fatalf("writes %v", e.writes)
		}
	})
	t.Run("claim gone at the patch is no error", func(t *testing.T) {
		e := newEnv(t, mkClaim(claimA, nil))
		targets := e.targets()
		targets.SurgeHostClaim = host
		e.onPatch = func(obj client.Object, _ client.Patch) error {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "nodeclaims"}, obj.GetName())
		}
		if _, err := step(e.pass(targets), "surge-claim-persist", nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a patch error is returned", func(t *testing.T) {
		e := newEnv(t, mkClaim(claimA, nil))
		targets := e.targets()
		targets.SurgeHostClaim = host
		e.onPatch = func(client.Object, client.Patch) error { return errors.New("boom") }
		if _, err := step(e.pass(targets), "surge-claim-persist", nil); err == nil || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("error %v", err)
		}
	})
}

func TestSurgeClaimReap(t *testing.T) {
	const surgeNode = "node-surge"
	induced := func() *karpv1.NodeClaim {
		c := mkClaim("claim-surge", nil)
		c.CreationTimestamp = metav1.Time{Time: now.Add(-time.Minute)}
		c.Status.NodeName = surgeNode
		return c
	}
	placeholder := mkPod(phNS, "ph-"+claimA, surgeNode, map[string]string{labelPair: claimA})
	dsPod := func() *corev1.Pod {
		p := mkPod("kube-system", "kube-proxy-x", surgeNode, nil)
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "kube-proxy", UID: "ds"}}
		return p
	}
	finished := func(phase corev1.PodPhase) *corev1.Pod {
		p := mkPod("default", "job-"+strings.ToLower(string(phase)), surgeNode, nil)
		p.Status.Phase = phase
		return p
	}
	for _, tc := range []struct {
		name   string
		pods   []client.Object
		reaped bool
	}{
		{"empty node", nil, true},
		{"placeholder and DaemonSet Pods only", []client.Object{placeholder, dsPod()}, true},
		{"finished Pods only", []client.Object{finished(corev1.PodSucceeded), finished(corev1.PodFailed)}, true},
		{"a workload Pod", []client.Object{placeholder, dsPod(), mkPod("default", "web-1", surgeNode, nil)}, false},
		{"a pending workload Pod bound to the node", []client.Object{func() client.Object {
			p := mkPod("default", "web-2", surgeNode, nil)
			p.Status.Phase = corev1.PodPending
			return p
		}()}, false},
		{"a surge-for-labelled Pod outside our namespace is a workload", []client.Object{mkPod("default", "imposter", surgeNode, map[string]string{labelPair: claimA})}, false},
		{"workloads on other nodes do not count", []client.Object{placeholder, mkPod("default", "web-3", "node-elsewhere", nil)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, append([]client.Object{induced()}, tc.pods...)...)
			targets := e.targets()
			targets.InducedClaim = induced()
			res, err := step(e.pass(targets), "surge-claim-reap", nil)
			if err != nil || res.Outcome != Done {
				t.Fatalf("%s %v", res.Outcome, err)
			}
			if gone := !e.exists(induced()); gone != tc.reaped {
				t.Fatalf("reaped %v, want %v (%s)", gone, tc.reaped, res.Did)
			}
			// idempotent: a second run changes nothing
			after := e.state()
			if _, err := step(e.pass(targets), "surge-claim-reap", nil); err != nil {
				t.Fatal(err)
			}
			if e.state() != after {
				t.Fatal("the second run changed the store")
			}
		})
	}
	t.Run("an induced claim with no node yet is reaped", func(t *testing.T) {
		c := induced()
		c.Status.NodeName = ""
		e := newEnv(t, c, mkPod("default", "web", "", nil))
		targets := e.targets()
		targets.InducedClaim = c
		if _, err := step(e.pass(targets), "surge-claim-reap", nil); err != nil {
			t.Fatal(err)
		}
		if e.exists(c) {
			t.Fatal("not reaped")
		}
	})
	t.Run("no induced claim: nothing", func(t *testing.T) {
		e := newEnv(t, induced())
		if _, err := step(e.pass(e.targets()), "surge-claim-reap", nil); err != nil {
			t.Fatal(err)
		}
		if len(e.writes) != 0 {
			t.Fatalf("writes %v", e.writes)
		}
	})
	t.Run("a Pod list error keeps the claim", func(t *testing.T) {
		e := newEnv(t, induced())
		e.onList = func(client.ObjectList) error { return errors.New("list refused") }
		targets := e.targets()
		targets.InducedClaim = induced()
		_, err := step(e.pass(targets), "surge-claim-reap", nil)
		if err == nil || !strings.Contains(err.Error(), "listing Pods on "+surgeNode) {
			t.Fatalf("error %v", err)
		}
		if !e.exists(induced()) {
			t.Fatal("reaped without knowing what the node hosts")
		}
	})
	t.Run("a recreated claim of the same name is not reaped", func(t *testing.T) {
		recreated := induced()
		recreated.UID = types.UID("uid-recreated")
		e := newEnv(t, recreated)
		targets := e.targets()
		targets.InducedClaim = induced()
		_, _ = step(e.pass(targets), "surge-claim-reap", nil)
		if !e.exists(recreated) {
			t.Fatal("reaped a claim this attempt did not induce")
		}
	})
	t.Run("already gone", func(t *testing.T) {
		e := newEnv(t)
		targets := e.targets()
		targets.InducedClaim = induced()
		if res, err := step(e.pass(targets), "surge-claim-reap", nil); err != nil || res.Outcome != Done {
			t.Fatalf("%s %v", res.Outcome, err)
		}
	})
}
