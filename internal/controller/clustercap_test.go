package controller

import (
	"context"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// twoDuePools are pools general and second, governed by the same policy,
// each with a claim due now.
func twoDuePools() []client.Object {
	second := nodeClaim("second-a", 20*time.Minute, "node-s")
	second.Labels[karpv1.NodePoolLabelKey] = "second"
	n := node("node-s")
	n.Labels[karpv1.NodePoolLabelKey] = "second"
	return []client.Object{nodePool("general"), nodePool("second"), governing(),
		nodeClaim("general-a", 20*time.Minute, "node-a"), node("node-a"), second, n}
}

// anchors counts the pools the API server shows anchored.
func anchors(t *testing.T, api client.Reader) int {
	t.Helper()
	pools := &karpv1.NodePoolList{}
	if err := api.List(t.Context(), pools); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pools.Items {
		if p.Annotations[v1alpha1.AnnotationActiveRotation] != "" {
			n++
		}
	}
	return n
}

// With -max-concurrent-rotations 1, two due pools reconciled at once on a
// cache that never shows either anchor start one rotation between them,
// however often they pass: the start passes are serialised and the one
// that anchors is counted until the cache shows it. The held pool takes
// idle.cluster-cap and says so once.
func TestClusterCapHoldsTheSecondStart(t *testing.T) {
	for round := range 20 {
		api := newAPI(t, nil, twoDuePools()...)
		lagging := newAPI(t, nil, twoDuePools()...) // the cache: never sees a write
		w := wire(t, lagging, api)
		w.r.Cap = NewClusterCap(1)
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, pool := range []string{"general", "second"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := w.r.Reconcile(context.Background(), request(pool)); err != nil {
					mu.Lock()
					t.Errorf("Reconcile %s: %v", pool, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if n := anchors(t, api); n != 1 {
			t.Fatalf("round %d: %d rotations started, the cap is 1", round, n)
		}
		for range 3 {
			w.reconcile(t, "general")
			w.reconcile(t, "second")
		}
		if n := anchors(t, api); n != 1 {
			t.Fatalf("round %d: %d rotations after more passes, the cap is 1", round, n)
		}
		if l := w.linesWith("not starting: the cluster's cap on rotations in flight is reached"); len(l) != 1 ||
			l[0].kv["maxConcurrentRotations"] != 1.0 || l[0].kv["inFlight"] != 1.0 {
			t.Fatalf("round %d: cap lines %+v", round, l)
		}
	}
}

// Without a cap both pools start.
func TestNoClusterCapStartsEveryPool(t *testing.T) {
	api := newAPI(t, nil, twoDuePools()...)
	w := wire(t, newAPI(t, nil, twoDuePools()...), api)
	w.reconcile(t, "general")
	w.reconcile(t, "second")
	if n := anchors(t, api); n != 2 {
		t.Errorf("%d rotations started, want 2", n)
	}
}
