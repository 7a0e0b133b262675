package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// Inspector observes and decides pools as a pass would, reading through
// Reader.
type Inspector struct {
	// Reader serves the NodePools, NodeClaims, Nodes, RotationPolicies and
	// placeholder Pods: rotationctl reads them from an informer cache
	// built with the controller's own cache options, so one status of a
	// large fleet costs a list per kind, not a request per claim.
	Reader client.Reader
	// API lists the Pods on one node, uncached (as the controller does);
	// nil means Reader.
	API    client.Reader
	Engine *engine.Engine
	// Namespace is the controller's namespace, where its placeholders run.
	Namespace string
	Clock     func() time.Time
	// MaxConcurrentRotations is the controller's cluster cap, 0 for none
	// (docs/design.md#cluster-cap).
	MaxConcurrentRotations int
	// PullSecretsAllowed: the controller runs with
	// -prepull-use-pull-secrets (ControllerPullSecrets), so a policy's
	// usePullSecrets is judged as it honours it.
	PullSecretsAllowed bool
}

// look is one read-only pass over the pool: its observation and the
// decision of each machine. A pool that cannot be decided (a malformed
// annotation) returns the reason as problem, with what could be observed.
func (in *Inspector) look(ctx context.Context, pool string) (obs *observe.Observation, decisions []engine.Decision, problem string, err error) {
	api := in.API
	if api == nil {
		api = in.Reader
	}
	limit, err := in.cap(ctx, pool)
	if err != nil {
		return nil, nil, "", err
	}
	o := &observe.Observer{Cache: in.Reader, API: api, Namespace: in.Namespace, Clock: in.Clock, Rules: in.Engine, PullSecretsAllowed: in.PullSecretsAllowed}
	obs, err = o.Observe(ctx, pool, limit)
	var bad *observe.BadStateError
	switch {
	case errors.As(err, &bad):
		return nil, nil, "undecidable until fixed: " + bad.Error(), nil
	case err != nil:
		return nil, nil, "", fmt.Errorf("observing NodePool %s: %w", pool, err)
	case obs == nil:
		return nil, nil, "", fmt.Errorf("NodePool %s: %w", pool, ErrNoNodePool)
	}
	decisions = in.Engine.Decide(&obs.Snapshot)
	var undecided []string
	for _, d := range decisions {
		if d.Undecided != nil {
			undecided = append(undecided, fmt.Sprintf("the %s machine: %v", d.Machine, d.Undecided))
		}
	}
	if len(undecided) > 0 {
		problem = "undecidable until fixed: " + strings.Join(undecided, "; ")
	}
	return obs, decisions, problem, nil
}

// cap is the controller's cluster cap as a pass of pool would count it:
// the other pools the cluster shows anchored.
func (in *Inspector) cap(ctx context.Context, pool string) (observe.Cap, error) {
	if in.MaxConcurrentRotations <= 0 {
		return observe.NoCap, nil
	}
	pools := &karpv1.NodePoolList{}
	if err := in.Reader.List(ctx, pools); err != nil {
		return observe.Cap{}, fmt.Errorf("listing NodePools for the cluster cap: %w", err)
	}
	return observe.Cap{Max: in.MaxConcurrentRotations, InFlight: observe.AnchoredElsewhere(pools.Items, pool)}, nil
}

// ErrNoNodePool: the NodePool does not exist (or no longer does).
var ErrNoNodePool = errors.New("not found")

// PoolNames lists the cluster's NodePools, sorted.
func (in *Inspector) PoolNames(ctx context.Context) ([]string, error) {
	pools := &karpv1.NodePoolList{}
	if err := in.Reader.List(ctx, pools); err != nil {
		return nil, fmt.Errorf("listing NodePools: %w", err)
	}
	names := make([]string, 0, len(pools.Items))
	for _, p := range pools.Items {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names, nil
}

// decision returns the decision of the named machine, nil when none.
func decision(ds []engine.Decision, machine string) *engine.Decision {
	for i := range ds {
		if ds[i].Machine == machine {
			return &ds[i]
		}
	}
	return nil
}
