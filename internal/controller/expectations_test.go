package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// expectationsAt is a set of expectations on a clock the test moves, with
// the lines they log.
func expectationsAt(t *testing.T) (*Expectations, *time.Time, logr.Logger, *[]string) {
	t.Helper()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var lines []string
	log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
	return NewExpectations(func() time.Time { return now }), &now, log, &lines
}

func objMeta(name, rv string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, ResourceVersion: rv}
}

// cachedAt is an observation of pool p whose copies carry the given
// resourceVersions: the pool, a claim, the old node, the surge host and a
// stranded node.
func cachedAt(pool, claim, oldNode, surgeHost, stranded string) *observe.Observation {
	return &observe.Observation{
		Pool:      &karpv1.NodePool{ObjectMeta: objMeta("p", pool)},
		Claims:    []karpv1.NodeClaim{{ObjectMeta: objMeta("c", claim)}},
		OldNode:   &corev1.Node{ObjectMeta: objMeta("old", oldNode)},
		SurgeHost: &corev1.Node{ObjectMeta: objMeta("surge", surgeHost)},
		Stranded:  observe.Stranded{Nodes: []*corev1.Node{{ObjectMeta: objMeta("stranded", stranded)}}},
	}
}

// Every object a pass decides on and this controller writes holds the pass
// back while its cached copy is older than the last write to it.
func TestExpectationsHoldEveryWrittenObject(t *testing.T) {
	for _, tc := range []struct {
		written actions.Written
		behind  *observe.Observation
		name    string
	}{
		{actions.Written{Kind: "NodePool", Name: "p", ResourceVersion: "20"}, cachedAt("19", "50", "50", "50", "50"), "NodePool/p"},
		{actions.Written{Kind: "NodeClaim", Name: "c", ResourceVersion: "20"}, cachedAt("50", "19", "50", "50", "50"), "NodeClaim/c"},
		{actions.Written{Kind: "Node", Name: "old", ResourceVersion: "20"}, cachedAt("50", "50", "19", "50", "50"), "Node/old"},
		{actions.Written{Kind: "Node", Name: "surge", ResourceVersion: "20"}, cachedAt("50", "50", "50", "19", "50"), "Node/surge"},
		{actions.Written{Kind: "Node", Name: "stranded", ResourceVersion: "20"}, cachedAt("50", "50", "50", "50", "19"), "Node/stranded"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, log, _ := expectationsAt(t)
			e.Wrote([]actions.Written{tc.written})
			if got := e.Behind(tc.behind, log); got != tc.name {
				t.Fatalf("behind %q, want %q", got, tc.name)
			}
			// the cache catches up (an equal or newer copy): forgotten
			if got := e.Behind(cachedAt("20", "20", "20", "20", "20"), log); got != "" {
				t.Fatalf("caught up, still behind %q", got)
			}
			if got := e.Behind(tc.behind, log); got != "" {
				t.Fatalf("an expectation met once held a later pass back: %q", got)
			}
		})
	}
}

// Past the bound the pass decides on the copy it has, saying so once; an
// expectation no pass observes is forgotten after forgetAfter; a
// resourceVersion that is not a number never holds a pass back.
func TestExpectationsAreBounded(t *testing.T) {
	e, now, log, lines := expectationsAt(t)
	e.Wrote([]actions.Written{{Kind: "NodePool", Name: "p", ResourceVersion: "20"}})
	lagging := cachedAt("19", "1", "1", "1", "1")
	*now = now.Add(expectationBound)
	if got := e.Behind(lagging, log); got != "NodePool/p" {
		t.Fatalf("at the bound: behind %q, want NodePool/p", got)
	}
	*now = now.Add(time.Second)
	if got := e.Behind(lagging, log); got != "" || len(*lines) != 1 {
		t.Fatalf("past the bound: behind %q, lines %q; want none and one line", got, *lines)
	}
	if got := e.Behind(lagging, log); got != "" || len(*lines) != 1 {
		t.Fatalf("said again: lines %q", *lines)
	}

	e.Wrote([]actions.Written{{Kind: "NodeClaim", Name: "deleted", ResourceVersion: "20"}})
	*now = now.Add(forgetAfter)
	e.Behind(lagging, log)
	if len(e.want) != 1 {
		t.Fatalf("expectations %v: the one no pass observes is kept until forgetAfter has passed", e.want)
	}
	*now = now.Add(time.Second)
	e.Behind(lagging, log)
	if len(e.want) != 0 {
		t.Fatalf("expectations %v: want the unobserved one forgotten", e.want)
	}

	e.Wrote([]actions.Written{{Kind: "NodePool", Name: "p", ResourceVersion: "not-a-number"}})
	if got := e.Behind(lagging, log); got != "" {
		t.Fatalf("an opaque resourceVersion held the pass back: %q", got)
	}
}

// A pass that fails after a write still records it: the next pass, on a
// cache that has not shown that write, waits for it.
func TestAFailedPassRecordsTheWritesItMade(t *testing.T) {
	objs := func() []client.Object {
		np := nodePool("general")
		delete(np.Annotations, v1alpha1.AnnotationWindowOpenedAt) // the window machine writes the pool too
		return []client.Object{np, governing(), nodeClaim("general-a", 20*time.Minute, "node-a"), node("node-a")}
	}
	patches := 0
	api := newAPI(t, &interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if _, ok := obj.(*karpv1.NodePool); ok {
			if patches++; patches == 2 {
				return apierrors.NewInternalError(errors.New("the API server fails the window stamp"))
			}
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}, objs()...)
	w := wire(t, newAPI(t, nil, objs()...), api)
	if _, err := w.r.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "general"}}); err == nil {
		t.Fatal("the pass whose window stamp failed returned no error")
	}
	if a := get(t, api, "general", "", &karpv1.NodePool{}).Annotations; a[v1alpha1.AnnotationActiveRotation] != "general-a" {
		t.Fatalf("the anchor write did not land before the failure: %v", a)
	}
	decided := len(w.transitions())
	if res := w.reconcile(t, "general"); res != (reconcile.Result{RequeueAfter: staleRetry}) || len(w.transitions()) != decided {
		t.Errorf("the pass after the failed one: %+v deciding %v; want it to wait for the anchor write", res, w.transitions()[decided:])
	}
}
