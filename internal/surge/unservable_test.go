package surge

import (
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Karpenter's latest FailedScheduling Event on this placeholder is the
// word, whichever way the Event names its source.
func TestKarpenterUnschedulable(t *testing.T) {
	ph := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-a", UID: "u"}}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ev := func(reason, component, controller, msg string, at time.Time) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{UID: "u"}, Reason: reason, Message: msg,
			Source: corev1.EventSource{Component: component}, ReportingController: controller, EventTime: metav1.NewMicroTime(at)}
	}
	cases := []struct {
		name   string
		events []corev1.Event
		want   string
	}{
		{"none", nil, ""},
		{"kube-scheduler only", []corev1.Event{ev("FailedScheduling", "default-scheduler", "default-scheduler", "0/3 nodes are available", t0)}, ""},
		{"Karpenter's Nominated is not a refusal", []corev1.Event{ev("Nominated", "karpenter", "", "Pod should schedule on: nodeclaim/x", t0)}, ""},
		{"by source component", []corev1.Event{ev("FailedScheduling", "karpenter", "", "Failed to schedule pod, a", t0)}, "Failed to schedule pod, a"},
		{"by reporting controller", []corev1.Event{ev("FailedScheduling", "", "karpenter", "b", t0)}, "b"},
		{"by Karpenter's message alone", []corev1.Event{ev("FailedScheduling", "", "", "Failed to schedule pod, c", t0)}, "Failed to schedule pod, c"},
		{"a later Nominated: Karpenter found capacity after all", []corev1.Event{
			ev("FailedScheduling", "karpenter", "", "Failed to schedule pod, early", t0),
			ev("Nominated", "karpenter", "", "Pod should schedule on: nodeclaim/x", t0.Add(time.Minute)),
		}, ""},
		{"the latest of Karpenter's", []corev1.Event{
			ev("FailedScheduling", "karpenter", "", "Failed to schedule pod, new", t0.Add(time.Minute)),
			ev("FailedScheduling", "karpenter", "", "Failed to schedule pod, old", t0),
		}, "Failed to schedule pod, new"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := KarpenterUnschedulable(c.events, ph)
			switch {
			case c.want == "" && got != nil:
				t.Errorf("unservable %+v, want none", got)
			case c.want != "" && (got == nil || got.Message != c.want || got.Reason != ReasonUnschedulable || got.Object != "Pod/nrc-surge-a"):
				t.Errorf("unservable %+v, want message %q", got, c.want)
			}
		})
	}
}

// A launch failure is Launched not True with a reason Karpenter wrote; a
// claim still starting, launched, or already being deleted is none.
func TestLaunchFailure(t *testing.T) {
	claim := func(st metav1.ConditionStatus, reason string, deleting bool) *karpv1.NodeClaim {
		c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "s"}}
		c.Status.Conditions = []status.Condition{{Type: karpv1.ConditionTypeLaunched, Status: st, Reason: reason, Message: "m"}}
		if deleting {
			c.DeletionTimestamp = &metav1.Time{}
		}
		return c
	}
	if u := LaunchFailure(claim(metav1.ConditionUnknown, "LaunchFailed", false)); u == nil || u.Reason != ReasonLaunchFailed || u.Message != "LaunchFailed: m" || u.Object != "NodeClaim/s" {
		t.Errorf("LaunchFailed: %+v", u)
	}
	if u := LaunchFailure(claim(metav1.ConditionFalse, "NodeClassNotFound", false)); u == nil {
		t.Error("a CreateError reason is a launch failure")
	}
	for _, c := range []*karpv1.NodeClaim{
		nil, claim(metav1.ConditionUnknown, "AwaitingReconciliation", false), claim(metav1.ConditionUnknown, "", false),
		claim(metav1.ConditionTrue, "Launched", false), claim(metav1.ConditionUnknown, "LaunchFailed", true), {},
	} {
		if u := LaunchFailure(c); u != nil {
			t.Errorf("%+v: launch failure %+v, want none", c, u)
		}
	}
}
