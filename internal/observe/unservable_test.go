package observe

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// The fail-fast read (docs/design.md#fail-fast): Karpenter's word that it
// cannot serve the placeholder counts once the placeholder has waited out
// the grace minute unbound, and the placeholder's Events are listed only
// then.
func TestUnservable(t *testing.T) {
	started := now.Add(-3 * time.Minute)
	subject := func(state string) *karpv1.NodeClaim {
		return nodeClaim("general-a", 40*time.Minute, "node-a", inState(state), startedAt(started))
	}
	waitingFor := func(age time.Duration, mods ...func(*corev1.Pod)) *corev1.Pod {
		p := placeholderPod("general-a", "")
		p.UID = "ph-uid"
		p.CreationTimestamp = metav1.NewTime(now.Add(-age))
		for _, m := range mods {
			m(p)
		}
		return p
	}
	event := func(name, component string, uid types.UID, msg string) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "nrc-surge-general-a", UID: uid},
			Reason:         "FailedScheduling", Message: msg, Source: corev1.EventSource{Component: component},
			Type: corev1.EventTypeWarning, LastTimestamp: metav1.NewTime(now.Add(-30 * time.Second)),
		}
	}
	karpenter := event("k", "karpenter", "ph-uid", "Failed to schedule pod, all available instance types exceed limits for nodepool: \"general\"")
	scheduler := event("s", "default-scheduler", "ph-uid", "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.")
	launchFailed := func(c *karpv1.NodeClaim) {
		c.Status.Conditions = []status.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionUnknown, Reason: "LaunchFailed", Message: "creating instance, quota exceeded"}}
	}
	launching := func(c *karpv1.NodeClaim) {
		c.Status.Conditions = []status.Condition{{Type: karpv1.ConditionTypeLaunched, Status: metav1.ConditionUnknown, Reason: "AwaitingReconciliation"}}
	}
	cases := []struct {
		name       string
		objs       []client.Object
		want       string // the reason, "" for none
		listEvents bool
	}{
		{"Karpenter said it cannot schedule the placeholder", []client.Object{subject(v1alpha1.StatePending), waitingFor(2 * time.Minute), karpenter}, surge.ReasonUnschedulable, true},
		{"still in the grace minute: nothing is read", []client.Object{subject(v1alpha1.StatePending), waitingFor(50 * time.Second), karpenter}, "", false},
		{"kube-scheduler's FailedScheduling is every healthy rotation's", []client.Object{subject(v1alpha1.StatePending), waitingFor(2 * time.Minute), scheduler}, "", true},
		{"an Event of an earlier placeholder of the same name", []client.Object{subject(v1alpha1.StatePending), waitingFor(2 * time.Minute),
			event("old", "karpenter", "old-uid", "Failed to schedule pod, incompatible with nodepool")}, "", true},
		{"a NodeClaim launched for the attempt: Karpenter is serving it", []client.Object{subject(v1alpha1.StatePending), waitingFor(2 * time.Minute), karpenter,
			nodeClaim("general-s", poolE, "", launching, func(c *karpv1.NodeClaim) { c.CreationTimestamp = metav1.NewTime(started.Add(5 * time.Second)) })}, "", false},
		{"the induced NodeClaim reports a launch failure", []client.Object{subject(v1alpha1.StatePending), waitingFor(2 * time.Minute),
			nodeClaim("general-s", poolE, "", launchFailed, func(c *karpv1.NodeClaim) { c.CreationTimestamp = metav1.NewTime(started.Add(5 * time.Second)) })}, surge.ReasonLaunchFailed, false},
		{"a launch failure still in the grace minute", []client.Object{subject(v1alpha1.StatePending), waitingFor(40 * time.Second),
			nodeClaim("general-s", poolE, "", launchFailed, func(c *karpv1.NodeClaim) { c.CreationTimestamp = metav1.NewTime(started.Add(5 * time.Second)) })}, "", false},
		{"a bound placeholder is served", []client.Object{subject(v1alpha1.StatePending), waitingFor(2*time.Minute, func(p *corev1.Pod) { p.Spec.NodeName = "node-s" }), karpenter}, "", false},
		{"a terminating placeholder", []client.Object{subject(v1alpha1.StatePending), waitingFor(2*time.Minute, func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: now}
			p.Finalizers = []string{"test"}
		}), karpenter}, "", false},
		{"a draining claim's leftover placeholder", []client.Object{subject(v1alpha1.StateDraining), waitingFor(2 * time.Minute), karpenter}, "", false},
		{"past readyTimeout the readyTimeout row decides: nothing is read", []client.Object{
			nodeClaim("general-a", 40*time.Minute, "node-a", inState(v1alpha1.StatePending), startedAt(now.Add(-16*time.Minute))),
			waitingFor(16 * time.Minute), karpenter}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			listed := false
			funcs := &interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, ok := list.(*corev1.EventList); ok {
					listed = true
				}
				return cl.List(ctx, list, opts...)
			}}
			objs := append([]client.Object{nodePool(anchored("general-a")), governing(), node("node-a")}, c.objs...)
			obs, err := observerOn(newClient(t, funcs, objs...), now).Observe(context.Background(), "general", NoCap)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if obs.Unservable != nil {
				got = obs.Unservable.Reason
			}
			if got != c.want || obs.Snapshot.Surge.Unservable != c.want {
				t.Errorf("unservable %q (snapshot %q), want %q", got, obs.Snapshot.Surge.Unservable, c.want)
			}
			if listed != c.listEvents {
				t.Errorf("listed the placeholder's Events: %v, want %v", listed, c.listEvents)
			}
		})
	}
}

// The pass after the grace minute is on the clock: a placeholder created
// 20 s ago is looked at again 40 s from now.
func TestNextInstantAfterGrace(t *testing.T) {
	ph := placeholderPod("general-a", "")
	ph.CreationTimestamp = metav1.NewTime(now.Add(-20 * time.Second))
	claim := nodeClaim("general-a", 40*time.Minute, "node-a", inState(v1alpha1.StatePending), startedAt(now.Add(-25*time.Second)))
	obs := observeNow(t, nodePool(anchored("general-a")), governing(), node("node-a"), claim, ph)
	if want := now.Add(40 * time.Second); !obs.NextInstant.Equal(want) {
		t.Errorf("next instant %s, want %s", obs.NextInstant, want)
	}
}

// A failed Events list is no failed pass: Karpenter is taken to have said
// nothing, and the error is kept for the reconciler to log.
func TestUnservableReadErrorIsNotFatal(t *testing.T) {
	ph := placeholderPod("general-a", "")
	ph.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Minute))
	funcs := &interceptor.Funcs{List: func(ctx context.Context, cl client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		if _, ok := list.(*corev1.EventList); ok {
			return errors.New("events is forbidden")
		}
		return cl.List(ctx, list, opts...)
	}}
	claim := nodeClaim("general-a", 40*time.Minute, "node-a", inState(v1alpha1.StatePending), startedAt(now.Add(-3*time.Minute)))
	obs, err := observerOn(newClient(t, funcs, nodePool(anchored("general-a")), governing(), node("node-a"), claim, ph), now).Observe(context.Background(), "general", NoCap)
	if err != nil {
		t.Fatalf("the pass failed: %v", err)
	}
	if obs.Unservable != nil || len(obs.ReadErrors) != 1 || !strings.Contains(obs.ReadErrors[0].Error(), "forbidden") {
		t.Errorf("unservable %+v, read errors %v", obs.Unservable, obs.ReadErrors)
	}
}
