// Package markers is what a rotation leaves on objects that must be taken
// off when nothing owns it any more — the node markers (surge-for,
// our do-not-disrupt, our cordon) and a claim's failure record — as pure
// changes to an object's metadata. The startup sweep and the per-pass
// repair of stranded artefacts make the same changes through it
// (docs/design.md#startup-sweep).
package markers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// Marked reports whether a node carries any marker of ours.
func Marked(n *corev1.Node) bool {
	_, pair := n.Labels[v1alpha1.LabelSurgeFor]
	return pair || n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned] == "true" || n.Annotations[v1alpha1.AnnotationCordoned] == "true"
}

// Reverse removes our markers from a node and names what it reversed:
// "unfroze" for a surge-frozen node, "uncordoned" for a cordon-only one,
// "unfroze and uncordoned" for both. An operator's own do-not-disrupt or
// cordon (without our marker) is never touched.
func Reverse(n *corev1.Node) string {
	did := ""
	_, pair := n.Labels[v1alpha1.LabelSurgeFor]
	if pair || n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned] == "true" {
		did = "unfroze"
		delete(n.Labels, v1alpha1.LabelSurgeFor)
		if n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned] == "true" {
			delete(n.Annotations, v1alpha1.KarpenterDoNotDisrupt)
			delete(n.Annotations, v1alpha1.AnnotationDoNotDisruptOwned)
		}
	}
	if n.Annotations[v1alpha1.AnnotationCordoned] == "true" {
		if did == "" {
			did = "uncordoned"
		} else {
			did += " and uncordoned"
		}
		n.Spec.Unschedulable = false
		delete(n.Annotations, v1alpha1.AnnotationCordoned)
	}
	return did
}

// InFlight reports whether a claim's state says a rotation owns it.
func InFlight(c client.Object) bool {
	s := c.GetAnnotations()[v1alpha1.AnnotationState]
	return s == v1alpha1.StatePending || s == v1alpha1.StateDraining
}

// RecordFailure marks a claim failed as a rollback does: failed-at now,
// retry-count + 1, started-at and surge-claim cleared — so it waits out its
// escalated backoff and then becomes a candidate again.
func RecordFailure(c client.Object, now time.Time) {
	a := c.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[v1alpha1.AnnotationState] = v1alpha1.StateFailed
	a[v1alpha1.AnnotationFailedAt] = now.UTC().Format(time.RFC3339)
	a[v1alpha1.AnnotationRetryCount] = v1alpha1.NextRetryCount(a[v1alpha1.AnnotationRetryCount])
	delete(a, v1alpha1.AnnotationStartedAt)
	delete(a, v1alpha1.AnnotationSurgeClaim)
	// the recorded reason was an earlier attempt's; this failure's is the
	// sweep's or the repair's, said in its log line
	delete(a, v1alpha1.AnnotationFailureReason)
	delete(a, v1alpha1.AnnotationRotateNext) // the attempt it asked for has ended
	c.SetAnnotations(a)
}
