package controller

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/announce"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// Backstop is the periodic self-requeue: window edges, freeze releases,
// drain progress and force-expiry are caught within it.
const Backstop = time.Minute

// immediately is the requeue of a "0s" row: the next step right away, in a
// new pass that re-reads the cache.
const immediately = 50 * time.Millisecond

// staleRetry brings back a pass that stopped on a stale cache
// (actions.ErrStale). The watch event of the newer object normally requeues
// the pool sooner; this bounds the wait if it does not.
const staleRetry = time.Second

// NodePoolReconciler drives each NodePool's rotation one step per pass.
type NodePoolReconciler struct {
	Client   client.Client
	Fresh    client.Reader
	Observer *observe.Observer
	// Cap bounds the rotations in flight across the cluster; its lock
	// serialises the passes that may start one (docs/design.md#cluster-cap).
	Cap       *ClusterCap
	Engine    *engine.Engine
	Announcer *announce.Announcer
	Log       logr.Logger
	// Placeholder shapes the placeholder Pods this reconciler creates.
	Placeholder PlaceholderConfig
	// Expectations hold the passes back from a cached copy older than this
	// instance's own last write to it (docs/design.md#read-your-writes).
	Expectations *Expectations

	// Sweep runs once, before the first pass (docs/design.md#startup-sweep).
	Sweep     func(context.Context)
	sweepOnce sync.Once
	// startable: whether each pool's last pass found a free slot, so its
	// next pass takes the cluster cap's lock (mayStart).
	startable sync.Map
	// OnDecision, when set, sees every decision (tests: transition coverage).
	OnDecision func(pool string, d engine.Decision)
	// OnObservation, when set, sees every pass's observation before the
	// decision (rotationctl simulate: the next instant a fact changes, and
	// the census it keeps its books on).
	OnObservation func(obs *observe.Observation)
}

// Reconcile is one pass: observe the pool, decide one transition per
// machine, run its steps on the pass's targets — handing the announcer
// what a step earned as soon as the step has run — then hand it the rest
// of what the pass has to say.
func (r *NodePoolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if r.Sweep != nil {
		r.sweepOnce.Do(func() { r.Sweep(ctx) })
	}
	capped := r.Cap.Max() > 0
	locked := capped && r.mayStart(ctx, req.Name)
	if locked {
		r.Cap.Lock()
		defer r.Cap.Unlock()
	}
	limit, err := r.Cap.count(ctx, r.Observer.Cache, req.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	obs, err := r.Observer.Observe(ctx, req.Name, limit)
	var bad *observe.BadStateError
	switch {
	case errors.As(err, &bad):
		return ctrl.Result{RequeueAfter: Backstop}, r.Announcer.Pass(r.badState(ctx, req.Name, bad))
	case err != nil:
		return ctrl.Result{}, err
	case obs == nil:
		r.startable.Delete(req.Name)
		r.Announcer.Forget(req.Name)
		metrics.Forget(req.Name)
		return ctrl.Result{}, nil
	}
	free := obs.FreeSlot() != nil
	r.startable.Store(req.Name, free)
	if capped && !locked && free {
		// a slot is free since the peek: decide again under the cap's
		// lock, so two starts never judge the count at once
		return ctrl.Result{RequeueAfter: immediately}, nil
	}
	if obj := r.Expectations.Behind(obs, r.Log.WithValues("nodepool", req.Name)); obj != "" {
		// the cache shows an older copy than this instance wrote: decide
		// once it has caught up (its watch event brings the pass sooner)
		r.Log.V(1).Info("pass waits for the cache to show this instance's write", "nodepool", req.Name, "object", obj)
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	if r.OnObservation != nil {
		r.OnObservation(obs)
	}
	decisions, err := r.decide(obs)
	if err != nil {
		return ctrl.Result{}, err
	}
	metrics.Record(gauges(obs, engineDecisions(decisions)))
	report := announce.Report{View: view(obs), RulesVersion: r.Engine.Version()}
	requeue, err := r.act(ctx, obs, decisions, &report)
	if aerr := r.Announcer.Pass(report); aerr != nil || err != nil {
		return ctrl.Result{}, errors.Join(err, aerr)
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// act runs each decision's steps, saying what a step earned as soon as it
// has run — before the cleanup after it, so a process that dies in the
// cleanup has said it, and also when a later step fails
// (docs/design.md#announcements) — records on the report what each
// decision ran, and returns when to come back: the soonest of the
// decisions' requeues (or their onLost when the pass lost an election),
// the next instant a time-based fact changes, and the backstop.
//
// One pass writes for one rotation slot at most: once a slot's steps have
// changed the pool, the later slots' decisions — made on the pool as
// observed, its start gates among them — are left to a pass at once on
// the newer pool, and the announcer ends no round of its conditions
// (docs/design.md#throughput). The other machines (the window's) decide
// on the pool as before.
func (r *NodePoolReconciler) act(ctx context.Context, obs *observe.Observation, decisions []decided, report *announce.Report) (time.Duration, error) {
	pass := &actions.Pass{Client: r.Client, Fresh: r.Fresh, Targets: r.targets(obs)}
	defer r.recordStart(obs, pass)
	defer func() { r.Expectations.Wrote(pass.Wrote()) }()
	requeue := Backstop
	if !obs.NextInstant.IsZero() {
		requeue = min(requeue, obs.NextInstant.Sub(obs.Now))
	}
	observed := obs.Pool.ResourceVersion
	for _, d := range decisions {
		if d.Machine == rotationMachine && pass.PoolResourceVersion() != observed {
			report.Partial = true
			requeue = immediately
			continue
		}
		view := report.View
		if d.obs != obs {
			view = cutView(d.obs) // the slot's rotation: its claim, its nodes
		}
		if d.Undecided != nil {
			// a malformed input this machine's row depends on: it takes no
			// step, the others go on (docs/design.md#bad-input)
			report.Undecided = append(report.Undecided, d.Decision)
			continue
		}
		if r.OnDecision != nil {
			r.OnDecision(obs.Pool.Name, d.Decision)
		}
		pass.Retarget(r.targets(d.obs))
		before := len(pass.Results)
		ran, err := r.run(ctx, pass, d.Decision, view)
		report.Decided = append(report.Decided, announce.Decided{Decision: d.Decision, Owned: ran.Owned, Results: pass.Results[before:], Err: err})
		if errors.Is(err, actions.ErrStale) {
			return staleRetry, nil
		}
		if err != nil {
			return 0, err
		}
		if ran.Owned {
			requeue = min(requeue, d.Requeue)
		} else {
			requeue = min(requeue, d.OnLost)
		}
	}
	return max(requeue, immediately), nil
}

// run runs one decision's steps, handing the announcer what each step
// earned before the next step runs.
func (r *NodePoolReconciler) run(ctx context.Context, pass *actions.Pass, d engine.Decision, v *announce.View) (actions.Ran, error) {
	var ran actions.Ran
	for !ran.Done {
		var err error
		if ran, err = actions.RunFrom(ctx, pass, d, ran.Next); err != nil {
			// RunFrom returns right after a step that earned something, so
			// a failing run has earned nothing yet; said all the same, if
			// that ever changes
			return ran, errors.Join(err, r.Announcer.Earned(v, ran.Earned))
		}
		if err := r.Announcer.Earned(v, ran.Earned); err != nil {
			return ran, err
		}
	}
	return ran, nil
}

// mayStart peeks at the cached NodePool: only a pool with a free slot can
// start a rotation, so only its pass takes the cluster cap's lock. A pool
// without an anchor has one; one with anchors has one when its last pass
// found one (the number in force is the observation's to resolve).
func (r *NodePoolReconciler) mayStart(ctx context.Context, pool string) bool {
	np := &karpv1.NodePool{}
	if err := r.Observer.Cache.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		return true // the pass will find out; taking the lock is the safe side
	}
	if free, ok := r.startable.Load(pool); ok && free.(bool) {
		return true
	}
	return len(v1alpha1.Anchors(np.Annotations)) == 0
}

// recordStart tells the cluster cap about an anchor this pass wrote, so
// the next pool's pass counts it before the cache shows it
// (docs/design.md#cluster-cap).
func (r *NodePoolReconciler) recordStart(obs *observe.Observation, pass *actions.Pass) {
	if r.Cap.Max() <= 0 {
		return
	}
	for _, res := range pass.Results {
		if res.Action == actions.ActionAnchorWrite && res.Outcome == actions.Claimed {
			r.Cap.Started(obs.Pool.Name, obs.Pool.ResourceVersion)
		}
	}
}
