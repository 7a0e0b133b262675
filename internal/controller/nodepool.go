package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/announce"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// Backstop is the periodic self-requeue: window edges, freeze releases,
// drain progress and force-expiry are caught within it (§5.2).
const Backstop = time.Minute

// immediately is the requeue of a "0s" row: the next step right away.
const immediately = 50 * time.Millisecond

// NodePoolReconciler drives each NodePool's rotation one step per pass.
type NodePoolReconciler struct {
	Client    client.Client
	Fresh     client.Reader
	Observer  *observe.Observer
	Engine    *engine.Engine
	Announcer *announce.Announcer
	Log       logr.Logger

	Namespace, PlaceholderPriorityClass, PlaceholderImage string

	// Sweep runs once, before the first pass (§5.3 startup sweep).
	Sweep     func(context.Context)
	sweepOnce sync.Once
	// OnDecision, when set, sees every decision (tests: transition coverage).
	OnDecision func(pool string, d engine.Decision)
	lastBeat   atomic.Pointer[time.Time]
}

// Reconcile observes the pool, decides one transition per machine and runs
// its steps.
func (r *NodePoolReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := r.Log.WithValues("nodepool", req.Name)
	if r.Sweep != nil {
		r.sweepOnce.Do(func() { r.Sweep(ctx) })
	}
	obs, err := r.Observer.Observe(ctx, req.Name)
	var bad *observe.BadStateError
	switch {
	case errors.As(err, &bad):
		np := &karpv1.NodePool{}
		if r.Client.Get(ctx, req.NamespacedName, np) == nil {
			r.Announcer.Warn(req.Name, np, "InvalidAnnotation", bad.Error()+"; no step is taken")
		}
		return ctrl.Result{RequeueAfter: Backstop}, nil
	case err != nil:
		return ctrl.Result{}, err
	case obs == nil:
		r.Announcer.Forget(req.Name)
		metrics.Forget(req.Name)
		return ctrl.Result{}, nil
	}
	defer r.Announcer.EndPass(req.Name)
	metrics.Observe(obs)
	r.findings(obs)
	r.heartbeat(log)
	for _, b := range obs.BadAnnotations {
		r.Announcer.Warn(req.Name, obs.Pool, "InvalidAnnotation", fmt.Sprintf("%s: annotation %s=%q is %s; the claim is skipped", b.Object, b.Key, b.Value, b.Problem))
	}
	decisions, err := r.Engine.Decide(&obs.Snapshot)
	var fe *engine.FactError
	if errors.As(err, &fe) {
		r.Announcer.Warn(req.Name, obs.Pool, "InvalidAnnotation", fmt.Sprintf("cannot decide: %v; no step is taken", fe))
		return ctrl.Result{RequeueAfter: Backstop}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	pass := &actions.Pass{
		Client: r.Client, Fresh: r.Fresh, Obs: obs, Announcer: r.Announcer, Namespace: r.Namespace,
		PlaceholderPriorityClass: r.PlaceholderPriorityClass, PlaceholderImage: r.PlaceholderImage,
	}
	requeue := Backstop
	if !obs.NextInstant.IsZero() {
		requeue = min(requeue, obs.NextInstant.Sub(obs.Now))
	}
	for _, d := range decisions {
		if r.OnDecision != nil {
			r.OnDecision(req.Name, d)
		}
		before := len(pass.Results)
		owned, err := actions.Run(ctx, pass, d)
		if log.V(1).Enabled() {
			log.V(1).Info("pass", "machine", d.Machine, "transition", d.Transition, "owned", owned, "facts", d.Facts, "did", did(pass.Results[before:]))
		}
		if err != nil {
			return ctrl.Result{}, err
		}
		if owned {
			requeue = min(requeue, d.Requeue)
		} else {
			requeue = min(requeue, d.OnLost)
		}
	}
	return ctrl.Result{RequeueAfter: max(requeue, immediately)}, nil
}

// findings emits each schedule warning as a deduplicated Event on the pool
// (fatal findings are logged by idle.infeasible, never evented) and
// ShortLead on each claim that cannot get its K chances.
func (r *NodePoolReconciler) findings(obs *observe.Observation) {
	if !obs.Governed() {
		return
	}
	for _, f := range obs.Findings {
		if f.Severity == schedule.Warning {
			r.Announcer.Warn(obs.Pool.Name, obs.Pool, f.Reason, f.Message+"; "+f.Remedy)
		}
	}
	for i := range obs.Claims {
		c := &obs.Claims[i]
		if e := c.Spec.ExpireAfter.Duration; e != nil && obs.Derivation.ShortLead(*e) {
			r.Announcer.WarnKeyed(obs.Pool.Name, "ShortLead/"+c.Name, c, "ShortLead",
				fmt.Sprintf("expireAfter %s is not longer than K·P + t_rot = %s: the schedule cannot guarantee %d chances; rotated best-effort first",
					schedule.FormatDuration(*e), schedule.FormatDuration(obs.Derivation.Lead), obs.Settings.MinRotationChances))
		}
	}
}

// heartbeat logs at V(1), at most once a minute, that passes are running.
func (r *NodePoolReconciler) heartbeat(log logr.Logger) {
	if !log.V(1).Enabled() {
		return
	}
	now := time.Now()
	if last := r.lastBeat.Load(); last != nil && now.Sub(*last) < time.Minute {
		return
	}
	r.lastBeat.Store(&now)
	log.V(1).Info("heartbeat", "rulesVersion", r.Engine.Version())
}

func did(rs []actions.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Did
	}
	return out
}
