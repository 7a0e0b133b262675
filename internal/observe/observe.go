package observe

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/budget"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/policy"
)

// Observer reads the cluster for one pass.
type Observer struct {
	// Cache serves NodePools, NodeClaims, Nodes, RotationPolicies and the
	// controller's own Pods (labelled managed-by: the placeholders and
	// pre-pull Pods of Namespace, and with PullSecretsAllowed those of
	// every namespace).
	Cache client.Reader
	// API lists the Pods on one node and a waiting placeholder's Events
	// (field selectors), uncached.
	API       client.Reader
	Namespace string
	Clock     func() time.Time
	// Rules is the table the pass decides with: it declares when the
	// facts it computes from the clock change (engine.NextChange).
	Rules *engine.Engine
	// Memory keeps each claim's last census class for ExpiredUnrotated
	// (docs/design.md#coverage); nil keeps none (operator tools).
	Memory *Memory
	// PullSecretsAllowed: spec.prePull.usePullSecrets may be honoured
	// (-prepull-use-pull-secrets; docs/design.md#pre-pull).
	PullSecretsAllowed bool
}

// Cap is the cluster cap as one pass sees it (docs/design.md#cluster-cap):
// its Max, 0 when there is none, and the rotations in flight in the
// cluster's other pools, -1 when there is no cap. The caller counts them:
// the controller from the cache and the starts its own process made that
// the cache has not shown yet (process state the observer does not keep).
type Cap struct{ Max, InFlight int }

// NoCap is the cap of a pass with no -max-concurrent-rotations.
var NoCap = Cap{InFlight: -1}

// AnchoredElsewhere counts the anchored slots of the pools other than
// self: the rotations in flight the cache shows.
func AnchoredElsewhere(pools []karpv1.NodePool, self string) int {
	n := 0
	for i := range pools {
		if pools[i].Name != self {
			n += len(v1alpha1.Anchors(pools[i].Annotations))
		}
	}
	return n
}

// Observe builds the observation of the NodePool named pool, with the
// cluster cap as counted for this pass; nil when the NodePool no longer
// exists.
func (o *Observer) Observe(ctx context.Context, pool string, cap Cap) (*Observation, error) {
	if o.Rules == nil {
		return nil, errors.New("observer: no rules table to tell when its facts change")
	}
	np := &karpv1.NodePool{}
	if err := o.Cache.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		if apierrors.IsNotFound(err) {
			o.Memory.forget(pool)
			return nil, nil
		}
		return nil, fmt.Errorf("reading NodePool %s: %w", pool, err)
	}
	obs := &Observation{Now: o.Clock(), Pool: np, Budget: budget.Allowance{Allowed: budget.Unbounded}}
	if err := o.governance(ctx, obs); err != nil {
		return nil, err
	}
	claims := &karpv1.NodeClaimList{}
	if err := o.Cache.List(ctx, claims, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
		return nil, fmt.Errorf("listing NodeClaims of %s: %w", pool, err)
	}
	obs.Claims = claims.Items
	if err := o.artefacts(ctx, obs); err != nil {
		return nil, err
	}
	if err := o.census(ctx, obs); err != nil {
		return nil, err
	}
	if obs.Governed() && obs.PolicyErr == nil {
		obs.WindowEnd = windowEnd(obs)
	}
	if err := o.stranded(ctx, obs); err != nil {
		return nil, err
	}
	obs.ClusterCap, obs.ClusterInFlight = cap.Max, cap.InFlight
	if obs.Governed() && obs.PolicyErr == nil {
		obs.disruption()
	}
	if err := o.slots(ctx, obs); err != nil {
		return nil, err
	}
	for _, s := range obs.Slots {
		s.Snapshot = snapshot(s)
	}
	obs.first()
	obs.Snapshot = poolSnapshot(obs)
	switch {
	case !obs.Governance.Governed() && len(obs.Governance.Conflict) == 0:
		o.Memory.forget(pool) // no policy: nothing to say of its claims
	case !obs.Governed():
		// a tie or an invalid policy, often brief: the memory is kept for
		// when one valid policy governs the pool again
	default:
		if obs.Lost = o.lost(obs); obs.Lost != nil {
			obs.Snapshot.Lost = obs.Lost.Claim
		}
	}
	obs.NextInstant = nextInstant(obs, o.Rules)
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
	obs.Settings, obs.PolicyErr = obs.Governance.Settings, obs.Governance.Err
	if obs.PolicyErr != nil {
		return nil
	}
	obs.inputs, obs.Derivation = obs.Settings.Derive(obs.Pool, obs.Now)
	obs.WindowOpen = obs.Settings.Calendar.IsOpen(obs.Now)
	return nil
}

// census classifies the claims of a governed pool and assesses its
// findings; an ungoverned pool's census is its claim count.
func (o *Observer) census(ctx context.Context, obs *Observation) error {
	if !obs.Governed() {
		obs.Census = census.Result{Census: census.Census{Total: len(obs.Claims)}}
		return nil
	}
	b := &blockerReader{o: o, obs: obs}
	obs.CensusInput = census.Input{
		Now: obs.Now, Claims: obs.Claims, Settings: obs.Settings, Derivation: obs.Derivation,
		OptedOut: func(c *karpv1.NodeClaim) bool { return o.optedOut(ctx, c) },
		Anchored: map[string]bool{}, Surge: obs.surgeClaims(),
	}
	for _, a := range v1alpha1.Anchors(obs.Pool.Annotations) {
		obs.CensusInput.Anchored[a.Claim] = true
	}
	c := obs.Settings.Concurrency
	n, taken := c.Count, false // a count needs no census...
	if c.Auto || c.Percent != 0 {
		taken = true
		// ...a percentage or auto is of the census's population
		obs.Census = census.Take(obs.CensusInput)
		n = c.Resolve(obs.inputs, obs.Derivation.Cycle, obs.Census.Population).N
	}
	if _, free := v1alpha1.StartSlot(obs.Pool.Annotations, n); free && obs.WindowOpen {
		// Only a pool with a free slot in an open window starts one: full
		// or closed, the candidate's drain blockers are not worth a Pod
		// list per pass (docs/design.md#drain-blockers).
		obs.CensusInput.DrainBlockers = func(c *karpv1.NodeClaim) []census.Blocker { return b.blockers(ctx, c) }
	}
	if !taken || obs.CensusInput.DrainBlockers != nil {
		obs.Census = census.Take(obs.CensusInput)
	}
	if b.err != nil {
		return b.err
	}
	obs.BadAnnotations = append(obs.BadAnnotations, obs.Census.Bad...)
	// the number of rotations in force, and C with it
	obs.inputs, obs.Derivation, obs.InForce = obs.Settings.Sized(obs.inputs, obs.Derivation.Cycle, obs.Census.Population)
	obs.Findings = obs.Settings.Assess(obs.inputs, obs.Derivation, obs.Census.Population)
	obs.Coverage = obs.Settings.Coverage(obs.inputs, obs.Derivation.Cycle, obs.Pool, obs.Census.Population, obs.Now)
	return nil
}

// optedOut reports an operator-set karpenter.sh/do-not-disrupt: "true" on
// the claim's node — one without our ownership marker.
func (o *Observer) optedOut(ctx context.Context, c *karpv1.NodeClaim) bool {
	if c.Status.NodeName == "" {
		return false
	}
	n := &corev1.Node{}
	if err := o.Cache.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, n); err != nil {
		return false
	}
	return n.Annotations[v1alpha1.KarpenterDoNotDisrupt] == "true" && n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned] != "true"
}

func getOptional(ctx context.Context, r client.Reader, key client.ObjectKey, obj client.Object) (bool, error) {
	if err := r.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading %T %s: %w", obj, key, err)
	}
	return true, nil
}
