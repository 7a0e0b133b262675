package surge

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// UnservableGrace is how long a placeholder may wait before Karpenter's
// word that it cannot serve it rolls the attempt back
// (docs/design.md#fail-fast). Karpenter batches pending Pods for 1 to 10 s
// before it launches, and a placeholder is PodScheduled=False on every
// healthy rotation until its node is Ready; a minute leaves a healthy
// launch six batch windows to show up.
const UnservableGrace = time.Minute

// The reasons a surge attempt fails (docs/design.md#fail-fast): the value
// of noderotation.io/failure-reason and of the failure log line's reason.
const (
	ReasonTimeout       = v1alpha1.FailureTimeout
	ReasonUnschedulable = v1alpha1.FailureUnschedulable
	ReasonLaunchFailed  = v1alpha1.FailureLaunchFailed
)

// Unservable is Karpenter's word that it cannot serve the placeholder.
type Unservable struct {
	// Reason is ReasonUnschedulable or ReasonLaunchFailed.
	Reason string
	// Object names what said it: the placeholder Pod, or the surge
	// NodeClaim whose launch failed.
	Object string
	// Message is Karpenter's own text.
	Message string
}

// karpenterComponent is the source of the Events Karpenter records.
const karpenterComponent = "karpenter"

// failedToSchedule prefixes the message of Karpenter v1.13's
// FailedScheduling Event on a Pod (pkg/controllers/provisioning/scheduling,
// PodFailedToScheduleEvent); kube-scheduler's FailedScheduling reads
// "0/N nodes are available…".
const failedToSchedule = "Failed to schedule pod, "

// KarpenterUnschedulable is Karpenter's FailedScheduling Event on the
// placeholder when that is Karpenter's latest word on it, nil otherwise: a
// later Nominated (Karpenter found capacity after all) or none at all.
// kube-scheduler records the same reason on every placeholder until its
// node is Ready, so only an Event Karpenter recorded counts: it says no
// NodePool, instance type or limit lets Karpenter launch a node for the Pod.
func KarpenterUnschedulable(events []corev1.Event, placeholder *corev1.Pod) *Unservable {
	var latest *corev1.Event
	var at time.Time
	for i := range events {
		e := &events[i]
		if e.Reason != "FailedScheduling" && e.Reason != "Nominated" || e.InvolvedObject.UID != placeholder.UID || !fromKarpenter(e) {
			continue
		}
		if t := eventTime(e); latest == nil || !t.Before(at) {
			latest, at = e, t
		}
	}
	if latest == nil || latest.Reason != "FailedScheduling" {
		return nil
	}
	return &Unservable{Reason: ReasonUnschedulable, Object: "Pod/" + placeholder.Name, Message: latest.Message}
}

func fromKarpenter(e *corev1.Event) bool {
	return e.Source.Component == karpenterComponent || e.ReportingController == karpenterComponent ||
		e.Reason == "FailedScheduling" && strings.HasPrefix(e.Message, failedToSchedule)
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// LaunchFailure is the surge NodeClaim's report that its launch failed:
// Karpenter's Launched condition, not True, with a reason other than the
// one it starts with. Karpenter v1.13 writes reason LaunchFailed (or the
// cloud provider's CreateError reason) with the error's text and retries;
// an insufficient-capacity error deletes the claim instead and launches
// another, which is not a failure of the attempt.
func LaunchFailure(c *karpv1.NodeClaim) *Unservable {
	if c == nil || c.DeletionTimestamp != nil {
		return nil
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type != karpv1.ConditionTypeLaunched {
			continue
		}
		if cond.Status == "True" || cond.Reason == "" || cond.Reason == awaitingReconciliation {
			return nil
		}
		return &Unservable{Reason: ReasonLaunchFailed, Object: "NodeClaim/" + c.Name, Message: cond.Reason + ": " + cond.Message}
	}
	return nil
}

// awaitingReconciliation is the reason every status condition of a
// Karpenter object starts with (operatorpkg's ConditionSet.SetUnknown).
const awaitingReconciliation = "AwaitingReconciliation"
