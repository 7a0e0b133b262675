package controller

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/announce"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
)

func request(pool string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: pool}}
}

func (w *world) reconcile(t *testing.T, pool string) reconcile.Result {
	t.Helper()
	res, err := w.r.Reconcile(context.Background(), request(pool))
	if err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	return res
}

// An idle governed pool with a due candidate starts: the anchor is written
// on the pool, RotationStarted is evented on it, and the next step follows
// at once (the 50ms floor of a "0s" row).
func TestIdlePoolStarts(t *testing.T) {
	w := newWorld(t, nil, nodePool("general"), governing(),
		nodeClaim("general-a", 20*time.Minute, "node-a"), node("node-a"), pod("app-1", "node-a", "500m"))
	res := w.reconcile(t, "general")
	if res != (reconcile.Result{RequeueAfter: 50 * time.Millisecond}) {
		t.Errorf("result %+v, want a 50ms requeue", res)
	}
	np := get(t, w.api, "general", "", &karpv1.NodePool{})
	if got := np.Annotations[v1alpha1.AnnotationActiveRotation]; got != "general-a" {
		t.Errorf("anchor %q, want general-a", got)
	}
	if want := []string{"Normal RotationStarted rotating NodeClaim general-a (deadline 2026-11-30T12:20:00Z)"}; !reflect.DeepEqual(w.rec.drain(), want) {
		t.Errorf("events differ from %v", want)
	}
	if p, ok := w.rec.objs[0].(*karpv1.NodePool); !ok || p.Name != "general" {
		t.Errorf("RotationStarted recorded on %T", w.rec.objs[0])
	}
	if want := []string{"idle.start", "window.open.stamped", "coverage.kept"}; !reflect.DeepEqual(w.transitions(), want) {
		t.Errorf("decisions %v, want %v", w.transitions(), want)
	}
	// The pass is logged at V(1) with what each step did.
	passes := w.linesWith("pass")
	if len(passes) != 3 || passes[0].kv["transition"] != "idle.start" || passes[0].kv["owned"] != true ||
		!reflect.DeepEqual(passes[0].kv["did"], []any{"anchor general-a: claimed", "announced RotationStarted"}) {
		t.Errorf("pass lines %+v", passes)
	}
	if len(w.linesWith("rotation candidate selected")) != 1 {
		t.Error("no RotationStarted line")
	}
	// The gauges show what the pass observed.
	if v, ok := gaugeSeries(t, metrics.Candidates, "general"); !ok || v != 1 {
		t.Errorf("candidates gauge %v, %v", v, ok)
	}
}

// A pending rotation whose placeholder is missing freezes and cordons the
// old node and creates the placeholder as configured, then waits 30s.
func TestPendingCreatesThePlaceholder(t *testing.T) {
	started := stamp(now.Add(-time.Minute))
	w := newWorld(t, nil, nodePool("general", v1alpha1.AnnotationActiveRotation, "general-a"), governing(),
		nodeClaim("general-a", 40*time.Minute, "node-a", v1alpha1.AnnotationState, "pending", v1alpha1.AnnotationStartedAt, started),
		node("node-a"), pod("app-1", "node-a", "500m"), pod("app-2", "node-a", "1"))
	if res := w.reconcile(t, "general"); res != (reconcile.Result{RequeueAfter: 30 * time.Second}) {
		t.Errorf("result %+v, want 30s", res)
	}
	if want := []string{"pending.create-placeholder", "window.open.stamped", "coverage.kept"}; !reflect.DeepEqual(w.transitions(), want) {
		t.Errorf("decisions %v", w.transitions())
	}
	ph := get(t, w.api, "nrc-surge-general-a", ns, &corev1.Pod{})
	if ph.Spec.PriorityClassName != "nrc-placeholder" || len(ph.Spec.Containers) != 1 || ph.Spec.Containers[0].Image != "example.com/pause:1" {
		t.Errorf("placeholder spec: priority %q containers %+v", ph.Spec.PriorityClassName, ph.Spec.Containers)
	}
	if cpu := ph.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1500m")) != 0 {
		t.Errorf("placeholder requests %s cpu, want the 1500m of node-a's Pods", cpu.String())
	}
	if ph.Labels[v1alpha1.LabelSurgeFor] != "general-a" || ph.Labels[v1alpha1.LabelNodePool] != "general" || ph.Spec.NodeSelector[karpv1.NodePoolLabelKey] != "general" {
		t.Errorf("placeholder labels %v selector %v", ph.Labels, ph.Spec.NodeSelector)
	}
	n := get(t, w.api, "node-a", "", &corev1.Node{})
	if !n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationCordoned] != "true" ||
		n.Annotations[v1alpha1.KarpenterDoNotDisrupt] != "true" || n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned] != "true" ||
		n.Labels[v1alpha1.LabelSurgeFor] != "general-a" {
		t.Errorf("old node not frozen and cordoned: unschedulable %v annotations %v labels %v", n.Spec.Unschedulable, n.Annotations, n.Labels)
	}
	c := get(t, w.api, "general-a", "", &karpv1.NodeClaim{})
	if c.Annotations[v1alpha1.AnnotationState] != "pending" || c.Annotations[v1alpha1.AnnotationStartedAt] != started {
		t.Errorf("claim annotations %v", c.Annotations)
	}
	if l := w.linesWith("surge placeholder created"); len(l) != 1 || l[0].kv["placeholder"] != "nrc-surge-general-a" {
		t.Errorf("placeholder line %+v", l)
	}
}

// A pass that loses the election (the anchor is already in the API, not
// yet in its cache) writes and announces nothing: its anchor write meets
// the newer pool (409), the pass stops as stale and comes back within
// staleRetry to decide on a fresher cache.
func TestLostElection(t *testing.T) {
	objs := func(pool *karpv1.NodePool) []client.Object {
		return []client.Object{pool, governing(), nodeClaim("general-a", 20*time.Minute, "node-a"), node("node-a")}
	}
	cache := newAPI(t, nil, objs(nodePool("general"))...)
	api := newAPI(t, nil, objs(nodePool("general"))...)
	// the other pass's anchor: a newer pool than the cache holds
	winner := get(t, api, "general", "", &karpv1.NodePool{})
	winner.Annotations = map[string]string{v1alpha1.AnnotationActiveRotation: "general-z"}
	if err := api.Update(context.Background(), winner); err != nil {
		t.Fatal(err)
	}
	w := wire(t, cache, api)
	if res := w.reconcile(t, "general"); res != (reconcile.Result{RequeueAfter: staleRetry}) {
		t.Errorf("result %+v, want the stale retry %s", res, staleRetry)
	}
	if got := get(t, api, "general", "", &karpv1.NodePool{}).Annotations[v1alpha1.AnnotationActiveRotation]; got != "general-z" {
		t.Errorf("anchor %q: the winner's anchor was overwritten", got)
	}
	if ev := w.rec.drain(); len(ev) != 0 {
		t.Errorf("events %v, want none from a lost election", ev)
	}
	if want := []string{"idle.start"}; !reflect.DeepEqual(w.transitions(), want) {
		t.Errorf("decisions %v, want the pass to stop at its stale write", w.transitions())
	}
	if passes := w.linesWith("pass"); len(passes) != 1 || passes[0].kv["owned"] != false ||
		!reflect.DeepEqual(passes[0].kv["did"], []any{"anchor general-a: stale"}) {
		t.Errorf("pass lines %+v", passes)
	}
	if stale := w.linesWith("pass stopped on a stale cache"); len(stale) != 1 {
		t.Errorf("stale lines %+v, want one", stale)
	}
}

// A fact the table cannot evaluate (a malformed started-at on the anchored
// claim) that the rotation machine's row depends on is a Warning on the
// pool naming the claim, key and value; that machine takes no step, the
// window machine decides as usual, and the pass comes back at the
// backstop.
func TestUndecidablePass(t *testing.T) {
	w := newWorld(t, nil, nodePool("general", v1alpha1.AnnotationActiveRotation, "general-a"), governing(),
		nodeClaim("general-a", 40*time.Minute, "node-a", v1alpha1.AnnotationState, "pending", v1alpha1.AnnotationStartedAt, "yesterday"),
		node("node-a"))
	before := versions(t, w.api)
	if res := w.reconcile(t, "general"); res != (reconcile.Result{RequeueAfter: time.Minute}) {
		t.Errorf("result %+v, want 1m", res)
	}
	ev := w.rec.drain()
	if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning InvalidAnnotation the rotation machine cannot decide: fact readyTimeoutElapsed reading NodeClaim/general-a noderotation.io/started-at=\"yesterday\": ") ||
		!strings.HasSuffix(ev[0], "; it takes no step until the value is fixed") {
		t.Errorf("events %q", ev)
	}
	if want := []string{"window.open.stamped", "coverage.kept"}; !reflect.DeepEqual(w.transitions(), want) {
		t.Errorf("decided %v, want only the window machine's %v", w.transitions(), want)
	}
	if after := versions(t, w.api); !reflect.DeepEqual(before, after) {
		t.Errorf("an undecidable pass wrote: %v → %v", before, after)
	}
	pods := &corev1.PodList{}
	if err := w.api.List(t.Context(), pods, client.InNamespace(ns)); err != nil || len(pods.Items) != 0 {
		t.Errorf("placeholders %d, %v", len(pods.Items), err)
	}
}

// The same malformed started-at does not block the rollback of a pool that
// lost its policy: pending.governance-lost does not depend on the ready
// timeout, so it runs — the placeholder deleted, the node unfrozen, the
// anchor cleared — and no InvalidAnnotation is said.
func TestAMalformedTimestampDoesNotBlockTheRollback(t *testing.T) {
	frozen := node("node-a")
	frozen.Labels[v1alpha1.LabelSurgeFor] = "general-a"
	frozen.Annotations = map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true", v1alpha1.AnnotationDoNotDisruptOwned: "true"}
	w := newWorld(t, nil, nodePool("general", v1alpha1.AnnotationActiveRotation, "general-a", v1alpha1.AnnotationActiveRotationState, "pending"),
		nodeClaim("general-a", 40*time.Minute, "node-a", v1alpha1.AnnotationState, "pending", v1alpha1.AnnotationStartedAt, "yesterday"), frozen)
	w.reconcile(t, "general")
	if want := []string{"pending.governance-lost", "window.closed.in-flight", "coverage.kept"}; !reflect.DeepEqual(w.transitions(), want) {
		t.Fatalf("decided %v, want %v", w.transitions(), want)
	}
	np := &karpv1.NodePool{}
	if err := w.api.Get(t.Context(), client.ObjectKey{Name: "general"}, np); err != nil || np.Annotations[v1alpha1.AnnotationActiveRotation] != "" {
		t.Errorf("anchor %q, %v: want it cleared", np.Annotations[v1alpha1.AnnotationActiveRotation], err)
	}
	n := &corev1.Node{}
	if err := w.api.Get(t.Context(), client.ObjectKey{Name: "node-a"}, n); err != nil || n.Annotations[v1alpha1.KarpenterDoNotDisrupt] != "" {
		t.Errorf("node annotations %v, %v: want it unfrozen", n.Annotations, err)
	}
	for _, e := range w.rec.drain() {
		if strings.Contains(e, "InvalidAnnotation") {
			t.Errorf("event %q: the rollback does not read the malformed value", e)
		}
	}
}

// versions are the resourceVersions of every pool, claim and node.
func versions(t *testing.T, c client.Reader) map[string]string {
	t.Helper()
	out := map[string]string{}
	pools, claims, nodes := &karpv1.NodePoolList{}, &karpv1.NodeClaimList{}, &corev1.NodeList{}
	for _, l := range []client.ObjectList{pools, claims, nodes} {
		if err := c.List(t.Context(), l); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pools.Items {
		out["pool/"+p.Name] = p.ResourceVersion
	}
	for _, c := range claims.Items {
		out["claim/"+c.Name] = c.ResourceVersion
	}
	for _, n := range nodes.Items {
		out["node/"+n.Name] = n.ResourceVersion
	}
	return out
}

// An anchor naming another pool's claim is bad state: a Warning on the
// pool, nothing decided, the backstop requeue.
func TestBadStateAnchor(t *testing.T) {
	other := nodeClaim("other-a", 40*time.Minute, "", v1alpha1.AnnotationState, "pending")
	other.Labels[karpv1.NodePoolLabelKey] = "other"
	w := newWorld(t, nil, nodePool("general", v1alpha1.AnnotationActiveRotation, "other-a"), governing(), other)
	before := versions(t, w.api)
	if res := w.reconcile(t, "general"); res != (reconcile.Result{RequeueAfter: time.Minute}) {
		t.Errorf("result %+v, want 1m", res)
	}
	want := []string{`Warning InvalidAnnotation NodePool/general: annotation noderotation.io/active-rotation="other-a" names a NodeClaim of NodePool "other"; no step is taken`}
	if ev := w.rec.drain(); !reflect.DeepEqual(ev, want) {
		t.Errorf("events %q\nwant %q", ev, want)
	}
	if p, ok := w.rec.objs[0].(*karpv1.NodePool); !ok || p.Name != "general" {
		t.Errorf("warning recorded on %T", w.rec.objs[0])
	}
	if len(w.decisions) != 0 || !reflect.DeepEqual(before, versions(t, w.api)) {
		t.Errorf("bad state acted on: decisions %v", w.transitions())
	}
}

// A deleted pool is forgotten: its gauges and its announcer state go.
func TestDeletedPoolIsForgotten(t *testing.T) {
	w := newWorld(t, nil, governing())
	metrics.Candidates.WithLabelValues("gone").Set(3)
	warned := announce.Report{View: &announce.View{Pool: nodePool("gone"),
		BadAnnotations: []census.BadAnnotation{{Object: "NodeClaim/gone-a", Key: v1alpha1.AnnotationFailedAt, Value: "x", Problem: "not an RFC3339 time"}}}}
	if err := w.r.Announcer.Pass(warned); err != nil {
		t.Fatal(err)
	}
	res, err := w.r.Reconcile(context.Background(), request("gone"))
	if err != nil || res != (reconcile.Result{}) {
		t.Errorf("Reconcile = %+v, %v; want no requeue", res, err)
	}
	if _, ok := gaugeSeries(t, metrics.Candidates, "gone"); ok {
		t.Error("the deleted pool's gauge survived")
	}
	// The same warning fires again: its deduplication state was dropped.
	if err := w.r.Announcer.Pass(warned); err != nil {
		t.Fatal(err)
	}
	if ev := w.rec.drain(); len(ev) != 2 {
		t.Errorf("events %v, want the warning twice", ev)
	}
	if len(w.decisions) != 0 {
		t.Errorf("decided for a deleted pool: %v", w.transitions())
	}
}

// Reads and writes that fail fail the pass (controller-runtime retries it).
func TestErrorsFailThePass(t *testing.T) {
	boom := errors.New("boom")
	listFails := &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*v1alpha1.RotationPolicyList); ok {
			return boom
		}
		return c.List(ctx, list, opts...)
	}}
	w := newWorld(t, listFails, nodePool("general"), governing())
	if _, err := w.r.Reconcile(context.Background(), request("general")); !errors.Is(err, boom) {
		t.Errorf("observe error: %v", err)
	}
	createFails := &interceptor.Funcs{Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		return boom
	}}
	w = newWorld(t, createFails, nodePool("general", v1alpha1.AnnotationActiveRotation, "general-a"), governing(),
		nodeClaim("general-a", 40*time.Minute, "node-a", v1alpha1.AnnotationState, "pending", v1alpha1.AnnotationStartedAt, stamp(now)), node("node-a"))
	_, err := w.r.Reconcile(context.Background(), request("general"))
	want := "transition pending.create-placeholder step 5 (placeholder-ensure): creating placeholder nrc-system/nrc-surge-general-a: boom"
	if err == nil || err.Error() != want {
		t.Errorf("act error %v\nwant %s", err, want)
	}
	if len(w.linesWith("surge placeholder created")) != 0 {
		t.Error("announced a placeholder that was not created")
	}
}

// The requeue is the soonest of the rows' requeues and the next instant
// a time-based fact changes: here a claim due in 20s.
func TestRequeueAtTheNextInstant(t *testing.T) {
	w := newWorld(t, nil, nodePool("general"), governing(), nodeClaim("general-a", 49*time.Minute+20*time.Second, "node-a"), node("node-a"))
	if res := w.reconcile(t, "general"); res != (reconcile.Result{RequeueAfter: 20 * time.Second}) {
		t.Errorf("result %+v, want 20s", res)
	}
	if want := []string{"idle.no-candidate", "window.open.stamped", "coverage.kept"}; !reflect.DeepEqual(w.transitions(), want) {
		t.Errorf("decisions %v", w.transitions())
	}
	if l := w.linesWith("no rotation candidate"); len(l) != 1 || l[0].kv["reason"] != "no claim is past its age threshold" {
		t.Errorf("no-candidate line %+v", l)
	}
	// The next pass re-asserts the condition: the line is not repeated.
	w.reconcile(t, "general")
	if l := w.linesWith("no rotation candidate"); len(l) != 1 {
		t.Errorf("%d no-candidate lines over two passes", len(l))
	}
}

// Without a pool change the window-missed evaluation stamps an open
// window: the second machine's steps run in the same pass.
func TestWindowStamp(t *testing.T) {
	pool := nodePool("general")
	delete(pool.Annotations, v1alpha1.AnnotationWindowOpenedAt)
	w := newWorld(t, nil, pool, governing())
	if res := w.reconcile(t, "general"); res != (reconcile.Result{RequeueAfter: time.Minute}) {
		t.Errorf("result %+v", res)
	}
	if got := get(t, w.api, "general", "", &karpv1.NodePool{}).Annotations[v1alpha1.AnnotationWindowOpenedAt]; got != stamp(now) {
		t.Errorf("window-opened-at %q, want %s", got, stamp(now))
	}
	if want := []string{"idle.no-candidate", "window.open.stamp", "coverage.kept"}; !reflect.DeepEqual(w.transitions(), want) {
		t.Errorf("decisions %v", w.transitions())
	}
}

// The sweep runs once, before the first pass.
func TestSweepRunsOnce(t *testing.T) {
	w := newWorld(t, nil, nodePool("general"), governing())
	runs := 0
	w.r.Sweep = func(context.Context) {
		if len(w.decisions) != 0 {
			t.Error("the sweep ran after a pass")
		}
		runs++
	}
	w.reconcile(t, "general")
	w.reconcile(t, "general")
	if runs != 1 {
		t.Errorf("the sweep ran %d times", runs)
	}
}

// A pass never decides on a cached copy older than this instance's own
// last write to it: the pass after the anchor write, on a cache that still
// shows the pool without it, decides nothing, says nothing and comes back
// within staleRetry; once the cache shows the write, it decides; a cache
// that never catches up holds the pool for expectationBound, then the pass
// decides on what it has, with a log line.
func TestAPassWaitsForTheCacheToShowItsOwnWrite(t *testing.T) {
	objs := func() []client.Object {
		return []client.Object{nodePool("general"), governing(), nodeClaim("general-a", 20*time.Minute, "node-a"), node("node-a")}
	}
	cache, api := newAPI(t, nil, objs()...), newAPI(t, nil, objs()...)
	w := wire(t, cache, api)
	w.reconcile(t, "general")
	if want := []string{"idle.start", "window.open.stamped", "coverage.kept"}; !reflect.DeepEqual(w.transitions(), want) {
		t.Fatalf("first pass %v, want %v", w.transitions(), want)
	}
	w.rec.drain()
	for i := 0; i < 2; i++ {
		if res := w.reconcile(t, "general"); res != (reconcile.Result{RequeueAfter: staleRetry}) {
			t.Errorf("pass on the lagging cache: %+v, want the stale retry", res)
		}
	}
	if len(w.transitions()) != 3 || len(w.rec.drain()) != 0 {
		t.Errorf("the passes on the lagging cache decided %v or said something", w.transitions())
	}
	if l := w.linesWith("pass waits for the cache to show this instance's write"); len(l) != 2 || l[0].kv["object"] != "NodePool/general" {
		t.Errorf("wait lines %+v", l)
	}
	// the cache catches up: it now holds the written pool
	written := get(t, api, "general", "", &karpv1.NodePool{})
	cached := get(t, cache, "general", "", &karpv1.NodePool{})
	cached.Annotations = written.Annotations
	if err := cache.Update(t.Context(), cached); err != nil {
		t.Fatal(err)
	}
	w.reconcile(t, "general")
	if got := w.transitions(); len(got) != 6 || got[3] != "pending.create-placeholder" {
		t.Errorf("the pass on the caught-up cache decided %v", got)
	}

	// a cache that never shows the write: held for the bound, then decided on
	w2 := wire(t, newAPI(t, nil, objs()...), newAPI(t, nil, objs()...))
	w2.reconcile(t, "general")
	w2.reconcile(t, "general")
	if len(w2.transitions()) != 3 {
		t.Fatalf("decided %v within the bound", w2.transitions())
	}
	w2.now = w2.now.Add(expectationBound + time.Second)
	w2.reconcile(t, "general")
	if len(w2.transitions()) == 3 {
		t.Error("past the bound the pass still waits")
	}
	if l := w2.linesWith("the cache has not shown this instance's write; deciding on the copy it has"); len(l) != 1 || l[0].kv["object"] != "NodePool/general" {
		t.Errorf("bound lines %+v", l)
	}
}
