package observe

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/policy"
)

// Observer reads the cluster for one pass.
type Observer struct {
	// Cache serves NodePools, NodeClaims, Nodes, RotationPolicies and the
	// placeholder Pods (scoped to Namespace and the surge-for label).
	Cache client.Reader
	// API lists the Pods on one node (field selector), uncached.
	API       client.Reader
	Namespace string
	Clock     func() time.Time
}

// Observe builds the observation of the NodePool named pool; nil when the
// NodePool no longer exists.
func (o *Observer) Observe(ctx context.Context, pool string) (*Observation, error) {
	np := &karpv1.NodePool{}
	if err := o.Cache.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading NodePool %s: %w", pool, err)
	}
	obs := &Observation{Now: o.Clock(), Pool: np}
	if err := o.governance(ctx, obs); err != nil {
		return nil, err
	}
	claims := &karpv1.NodeClaimList{}
	if err := o.Cache.List(ctx, claims, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return nil, fmt.Errorf("listing NodeClaims of %s: %w", pool, err)
	}
	obs.Claims = claims.Items
	if err := o.census(ctx, obs); err != nil {
		return nil, err
	}
	if err := o.subject(ctx, obs); err != nil {
		return nil, err
	}
	obs.Snapshot = snapshot(obs)
	obs.NextInstant = nextInstant(obs)
	return obs, nil
}

// governance resolves the pool's policy, its settings and schedule figures.
func (o *Observer) governance(ctx context.Context, obs *Observation) error {
	policies := &v1alpha1.RotationPolicyList{}
	if err := o.Cache.List(ctx, policies); err != nil {
		return fmt.Errorf("listing RotationPolicies: %w", err)
	}
	obs.Governance = policy.Select(policies.Items, obs.Pool.Labels)
	if !obs.Governance.Governed() {
		return nil
	}
	obs.Settings, obs.PolicyErr = policy.Resolve(obs.Governance.Policy.Spec)
	if obs.PolicyErr != nil {
		return nil
	}
	obs.inputs, obs.Derivation = obs.Settings.Derive(obs.Pool, obs.Now)
	obs.WindowOpen = obs.Settings.Calendar.IsOpen(obs.Now)
	return nil
}

// governanceState is the engine's governance fact value.
func governanceState(obs *Observation) string {
	switch {
	case len(obs.Governance.Conflict) > 0:
		return "conflict"
	case !obs.Governance.Governed():
		return "ungoverned"
	case obs.PolicyErr != nil:
		return "invalid"
	}
	return "governed"
}
