package simulate

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/controller"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/policy"
)

// namespace is the simulated controller's, where its placeholders live.
const namespace = "node-rotation-system"

// world is one NodePool on its own in-memory API server. Pools never share
// an object the controller reads (the RotationPolicies are copied into
// each), so one API server per pool keeps every list as short as the
// pool's, as an informer cache's index would.
type world struct {
	sim   *sim
	spec  Pool
	api   client.WithWatch
	store *store
	r     *controller.NodePoolReconciler
	karp  *karpenter
	books *poolBooks

	// The pass scheduled next: a newer schedule supersedes it.
	passAt  time.Time
	passGen int
	pending bool
	// errBackoff is the retry delay after a failed pass, doubled on each
	// failure as controller-runtime's rate limiter does.
	errBackoff time.Duration
	lastObs    *observe.Observation
}

func newWorld(s *sim, spec Pool, policies []v1alpha1.RotationPolicy, sch *runtime.Scheme, eng *engine.Engine) (*world, error) {
	w := &world{sim: s, spec: spec, books: newPoolBooks(spec.Name)}
	w.store = newStore(func() metav1.Time { return metav1.NewTime(s.now) })
	objs := []client.Object{nodePool(spec)}
	for i := range policies {
		objs = append(objs, policies[i].DeepCopy())
	}
	// A plain object tracker: the default one manages fields for
	// server-side apply, which the controller never uses, and builds a
	// REST mapper on every write.
	tracker := clienttesting.NewObjectTracker(sch, serializer.NewCodecFactory(sch).UniversalDecoder())
	w.api = fake.NewClientBuilder().WithScheme(sch).WithObjectTracker(tracker).WithObjects(objs...).
		WithStatusSubresource(&v1alpha1.RotationPolicy{}, &corev1.Pod{}, &corev1.Node{}, &karpv1.NodeClaim{}, &karpv1.NodePool{}).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Name} }).
		WithInterceptorFuncs(w.store.funcs()).Build()
	cfg := controller.Config{Namespace: namespace, PlaceholderPriorityClass: "node-rotation-placeholder", PlaceholderImage: "registry.k8s.io/pause:3.10",
		Clock: func() time.Time { return s.now }}
	w.r = controller.NewNodePoolReconciler(w.api, w.api, eng, cfg, logr.Discard(), &eventBooks{books: w.books, now: s.clock})
	w.r.OnObservation = func(obs *observe.Observation) { w.lastObs = obs; w.books.observe(obs) }
	w.karp = &karpenter{w: w}

	return w, nil
}

// nodePool is the pool's Karpenter NodePool.
func nodePool(p Pool) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Labels: p.Labels}}
	e, _ := p.expireAfter()
	np.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{Duration: e}
	if p.Budgets != nil {
		np.Spec.Disruption.Budgets = *p.Budgets
	}
	if p.TerminationGracePeriod.Duration > 0 {
		np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: p.TerminationGracePeriod.Duration}
	}
	if p.EKSAutoMode {
		np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: policy.EKSAutoModeGroup, Kind: "NodeClass", Name: "default"}
	}
	return np
}

// populate creates the pool's nodes with their ages at the start.
func (w *world) populate(ctx context.Context) error {
	for i, t := range w.spec.creationTimes(w.sim.now) {
		if _, err := w.karp.createReady(ctx, zones[i%len(zones)], t, false); err != nil {
			return err
		}
	}
	return nil
}

// pass runs one reconcile of the pool unless a newer schedule superseded
// it, lets Karpenter react, and schedules the next pass.
func (w *world) pass(ctx context.Context, gen int) error {
	if gen != w.passGen {
		return nil
	}
	w.pending = false
	w.books.passes++
	res, err := w.r.Reconcile(ctx, reconcileRequest(w.spec.Name))
	if err != nil {
		// A pass that errs is retried as controller-runtime's default rate
		// limiter would: 5 ms doubling to 1000 s. The books count it.
		w.books.errors++
		w.books.lastError = err.Error()
		w.errBackoff = min(max(2*w.errBackoff, 5*time.Millisecond), 1000*time.Second)
		w.schedulePass(w.sim.now.Add(w.errBackoff))
		return w.karp.scan(ctx)
	}
	w.errBackoff = 0
	if err := w.karp.scan(ctx); err != nil {
		return err
	}
	w.schedulePass(w.nextPass(res.RequeueAfter))
	return nil
}

// nextPass is when the pool's next pass runs. A requeue shorter than the
// backstop is the table's and is kept, as is the backstop while a
// rotation is in flight. An idle pool's backstop pass would find nothing
// new — every change the simulator makes wakes the pool itself — so it
// sleeps to the next instant a time-based fact changes, except in the
// minute after a claim's age trigger: a claim is due strictly after its
// trigger, so the pass at the trigger itself finds nothing and the
// controller's backstop pass a minute later starts the rotation.
func (w *world) nextPass(requeue time.Duration) time.Time {
	now := w.sim.now
	if requeue < controller.Backstop || w.lastObs == nil || w.inFlight() || w.triggeredWithinBackstop() {
		return now.Add(requeue)
	}
	if next := w.lastObs.NextInstant; !next.IsZero() {
		return next
	}
	return w.sim.end.Add(time.Hour)
}

// triggeredWithinBackstop reports a claim whose age trigger passed less
// than a backstop ago.
func (w *world) triggeredWithinBackstop() bool {
	now := w.sim.now
	for _, f := range w.lastObs.Census.Figures {
		if !f.Trigger.IsZero() && !f.Trigger.After(now) && now.Sub(f.Trigger) < controller.Backstop {
			return true
		}
	}
	return false
}

func (w *world) inFlight() bool {
	return len(v1alpha1.Anchors(w.lastObs.Pool.Annotations)) > 0
}

// schedulePass brings the pool's next pass to at, unless one is due sooner.
func (w *world) schedulePass(at time.Time) {
	if w.pending && !w.passAt.After(at) {
		return
	}
	w.passGen++
	w.pending, w.passAt = true, at
	gen := w.passGen
	w.sim.at(at, func(ctx context.Context) error { return w.pass(ctx, gen) })
}

// wake is a watch event: the pool is reconciled now.
func (w *world) wake() { w.schedulePass(w.sim.now) }

var zones = []string{"zone-a", "zone-b", "zone-c"}

func claimName(pool string, n int) string { return fmt.Sprintf("%s-%05d", pool, n) }
