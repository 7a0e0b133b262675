package controller

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/internal/announce"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// view cuts from the observation what the announcer reads: the announcer
// knows the census, the policy and the surge figures, never the observer.
func view(obs *observe.Observation) *announce.View { return cutView(obs) }

// cutView is view of the pool's own observation or of one slot's.
func cutView(obs *observe.Observation) *announce.View {
	w := obs.WindowEnd
	return &announce.View{
		Now: obs.Now, Pool: obs.Pool, Governed: obs.Governed(),
		Governance: obs.Governance, PolicyErr: obs.PolicyErr, Settings: obs.Settings,
		Derivation: obs.Derivation, Findings: obs.Findings,
		WindowEnd:       announce.WindowEnd{Close: w.Close, Left: w.Left, Forecast: w.Forecast, Learned: w.Learned},
		ClusterInFlight: obs.ClusterInFlight, ClusterCap: obs.ClusterCap,
		Budget: obs.Budget, Disrupted: obs.Disruption.Disrupted, MaxUnavailable: max(obs.InForce.N, 1),
		Claims: obs.Claims, Census: obs.Census,
		Subject: obs.Subject, SubjectName: obs.SubjectName, OldNode: obs.OldNode,
		Placeholder: obs.Placeholder, SurgeHost: obs.SurgeHost, SurgeHostClaim: obs.SurgeHostClaim,
		InducedClaim: obs.InducedClaim, Unservable: obs.Unservable, Sizing: obs.Sizing, Shortfall: obs.Shortfall,
		BadAnnotations: obs.BadAnnotations, ReadErrors: obs.ReadErrors,
	}
}

// badState is the report of a pass whose observation stopped on an anchor
// that must not be acted on; the Warning goes on the pool as read now.
func (r *NodePoolReconciler) badState(ctx context.Context, pool string, bad *observe.BadStateError) announce.Report {
	b := &announce.BadState{BadAnnotation: bad.BadAnnotation}
	np := &karpv1.NodePool{}
	if r.Client.Get(ctx, client.ObjectKey{Name: pool}, np) == nil {
		b.Pool = np
	}
	return announce.Report{BadState: b}
}
