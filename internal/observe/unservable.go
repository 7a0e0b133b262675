package observe

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// unservable asks whether Karpenter has said it cannot serve the attempt's
// placeholder (docs/design.md#fail-fast), once the placeholder has waited
// out the grace period unbound: the surge NodeClaim it induced reports a
// launch failure, or, with no NodeClaim induced, Karpenter recorded a
// FailedScheduling Event on it. The Events are listed from the API server
// by the placeholder's name, only in that case: a healthy rotation never
// reads them. A list that fails counts as Karpenter saying nothing: the
// pass goes on, and readyTimeout still rolls the attempt back.
func (o *Observer) unservable(ctx context.Context, obs *Observation) error {
	ph := obs.Placeholder
	if ph == nil || !waiting(obs) || obs.Now.Sub(ph.CreationTimestamp.Time) < surge.UnservableGrace || timedOut(obs) {
		return nil
	}
	if obs.InducedClaim != nil {
		obs.Unservable = surge.LaunchFailure(obs.InducedClaim)
		return nil
	}
	list := &corev1.EventList{}
	if err := o.API.List(ctx, list, client.InNamespace(ph.Namespace), client.MatchingFields{"involvedObject.name": ph.Name}); err != nil {
		obs.ReadErrors = append(obs.ReadErrors, fmt.Errorf("listing the Events of placeholder %s/%s: %w", ph.Namespace, ph.Name, err))
		return nil
	}
	obs.Unservable = surge.KarpenterUnschedulable(list.Items, ph)
	return nil
}

// timedOut: readyTimeout has run out, so the readyTimeout row rolls the
// attempt back whatever Karpenter said.
func timedOut(obs *Observation) bool {
	started, err := time.Parse(time.RFC3339, obs.Subject.Annotations[v1alpha1.AnnotationStartedAt])
	return err == nil && obs.Now.Sub(started) > obs.Settings.ReadyTimeout
}

// waiting: the anchored attempt is in none or pending with its placeholder
// unbound and not terminating — the wait a fail-fast may end.
func waiting(obs *Observation) bool {
	ph, c := obs.Placeholder, obs.Subject
	if c == nil || ph.Spec.NodeName != "" || ph.DeletionTimestamp != nil ||
		obs.Anchor() != obs.SubjectName {
		return false
	}
	st := c.Annotations[v1alpha1.AnnotationState]
	return st == "" || st == v1alpha1.StatePending
}
