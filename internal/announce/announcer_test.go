package announce

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/budget"
	"github.com/noderotation/node-rotation-controller/internal/census"
	_ "github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// line is one captured log line: its message and every key/value pair.
type line struct {
	msg string
	kv  map[string]any
}

// event is one recorded Event with the object it was recorded on.
type event struct {
	obj                  runtime.Object
	typ, reason, message string
}

type recorder struct{ events []event }

func (r *recorder) Event(obj runtime.Object, typ, reason, msg string) {
	r.events = append(r.events, event{obj, typ, reason, msg})
}

func (r *recorder) Eventf(obj runtime.Object, typ, reason, format string, args ...any) {
	r.Event(obj, typ, reason, fmt.Sprintf(format, args...))
}

func (r *recorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, typ, reason, format string, args ...any) {
	r.Eventf(obj, typ, reason, format, args...)
}

type harness struct {
	a     *Announcer
	lines *[]line
	rec   *recorder
}

func newHarness(t *testing.T) harness { return newHarnessV(t, 0) }

// newHarnessV logs up to verbosity v.
func newHarnessV(t *testing.T, v int) harness {
	var lines []line
	log := funcr.NewJSON(func(obj string) {
		kv := map[string]any{}
		if err := json.Unmarshal([]byte(obj), &kv); err != nil {
			t.Fatalf("log line %s: %v", obj, err)
		}
		msg, _ := kv["msg"].(string)
		lines = append(lines, line{msg: msg, kv: kv})
	}, funcr.Options{Verbosity: v})
	rec := &recorder{}
	return harness{a: New(log, rec), lines: &lines, rec: rec}
}

// one returns the only line logged, failing otherwise.
func (h harness) one(t *testing.T) line {
	t.Helper()
	if len(*h.lines) != 1 {
		t.Fatalf("%d log lines, want 1: %+v", len(*h.lines), *h.lines)
	}
	return (*h.lines)[0]
}

func (h harness) announce(t *testing.T, what actions.Announcement, obs *View, results ...actions.Result) {
	t.Helper()
	if err := h.a.Earned(obs, []actions.Earned{{What: what, Before: results}}); err != nil {
		t.Fatal(err)
	}
}

// observation is one pass of pool "general" rotating general-a, started
// 5m ago (11:55), its surge host node-b's claim general-b created 4m ago.
func observation(t *testing.T) *View {
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-a", CreationTimestamp: metav1.NewTime(now.Add(-6 * 24 * time.Hour)),
		Annotations: map[string]string{v1alpha1.AnnotationStartedAt: now.Add(-5 * time.Minute).Format(time.RFC3339)}}}
	claim.Status.NodeName = "node-a"
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general", Annotations: map[string]string{}}}
	settings, err := policy.Resolve(v1alpha1.RotationPolicySpec{}) // readyTimeout 15m, retryBackoff 30m, no windows
	if err != nil {
		t.Fatal(err)
	}
	hostClaim := karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-b", CreationTimestamp: metav1.NewTime(now.Add(-4 * time.Minute))}}
	hostClaim.Status.NodeName = "node-b"
	obs := &View{
		Now: now, Pool: pool, Subject: claim, SubjectName: claim.Name, Settings: settings,
		Governance: policy.Governance{Policy: &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "api"}}},
		Census: census.Result{
			Census:    census.Census{Total: 3, Candidates: 1, InBackoff: 2},
			Candidate: &census.Candidate{Claim: claim, Kind: "surge", Deadline: now.Add(8 * 24 * time.Hour), Age: 6 * 24 * time.Hour},
		},
		Sizing:         &surge.Sizing{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, Clamped: []corev1.ResourceName{corev1.ResourceCPU}},
		OldNode:        &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
		SurgeHost:      &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}},
		SurgeHostClaim: &hostClaim,
		Shortfall:      &surge.Shortfall{Resource: corev1.ResourceCPU, Want: resource.MustParse("2"), Remaining: resource.MustParse("1"), Limit: resource.MustParse("10")},
	}
	obs.Claims = []karpv1.NodeClaim{*claim, hostClaim}
	return obs
}

// karpenterRefused: Karpenter said it cannot schedule the placeholder.
func karpenterRefused(o *View) {
	o.Placeholder = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-general-a"}}
	o.Unservable = &surge.Unservable{Reason: surge.ReasonUnschedulable, Object: "Pod/nrc-surge-general-a", Message: "Failed to schedule pod, all available instance types exceed limits"}
}

// failedFor is the result of a failure write recording reason.
func failedFor(reason string) []actions.Result {
	return []actions.Result{{Action: actions.ActionClaimState, Failure: &actions.Failure{Reason: reason, FailedAt: "2026-11-30T12:00:00Z", RetryCount: "3"}}}
}

// counter reads a counter series. (prometheus/testutil would need a
// go.mod change: it imports a module this one does not require.)
func counter(c *prometheus.CounterVec, labels ...string) float64 {
	var m dto.Metric
	if err := c.WithLabelValues(labels...).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// histogram reads a histogram series' sample count and sum.
func histogram(t *testing.T, pool, phase string) (uint64, float64) {
	t.Helper()
	var m dto.Metric
	if err := metrics.Duration.WithLabelValues(pool, phase).(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

// The state-machine lines of docs/observability.md, each with its exact message and key fields.
func TestLogLinesHaveTheExactTexts(t *testing.T) {
	cases := []struct {
		what    actions.Announcement
		msg     string
		fields  map[string]any
		results []actions.Result
		mutate  func(*View)
	}{
		{what: actions.RotationStarted, msg: "rotation candidate selected",
			fields: map[string]any{"nodeclaim": "general-a", "age": "144h0m0s", "deadline": "2026-12-08T12:00:00Z", "surgeless": false}},
		{what: actions.ForcefulFallback, msg: "rotation candidate selected", fields: map[string]any{"nodeclaim": "general-a", "surgeless": true},
			mutate: func(o *View) { o.Census.Candidate.Kind = "forcefulFallback" }},
		{what: actions.NoCandidate, msg: "no rotation candidate", fields: map[string]any{"reason": "every due claim is inside its retryBackoff"}},
		{what: actions.PlaceholderCreated, msg: "surge placeholder created", fields: map[string]any{"placeholder": "nrc-surge-general-a", "clamped": []any{"cpu"}}},
		{what: actions.InsufficientHeadroom, msg: "insufficient limits headroom; cannot surge",
			fields: map[string]any{"candidate": "general-a", "resource": "cpu", "want": "2", "remaining": "1", "limit": "10"}},
		{what: actions.SurgeReady, msg: "surge node ready", fields: map[string]any{"surgeNode": "node-b", "surgeWait": "5m0s", "surgePath": "provisioned"}},
		{what: actions.DrainStarted, msg: "drain started", fields: map[string]any{"node": "node-a", "mode": "surge"}},
		{what: actions.RotationFailed, msg: "rotation attempt failed",
			fields:  map[string]any{"reason": "Timeout", "readyTimeout": "15m0s", "retryCount": "2", "backoffUntil": "2026-11-30T13:00:00Z"},
			results: []actions.Result{{Action: actions.ActionClaimState, Failure: &actions.Failure{Reason: "Timeout", FailedAt: "2026-11-30T12:00:00Z", RetryCount: "2"}}}},
		{what: actions.RotationFailed, msg: "rotation attempt failed",
			fields:  map[string]any{"reason": "Unschedulable", "retryCount": "1", "backoffUntil": "2026-11-30T12:30:00Z"},
			results: []actions.Result{{Action: actions.ActionClaimState, Failure: &actions.Failure{Reason: "Unschedulable", FailedAt: "2026-11-30T12:00:00Z", RetryCount: "1"}}}},
		{what: actions.SurgeUnservable, msg: "surge placeholder is not schedulable",
			fields: map[string]any{"placeholder": "nrc-surge-general-a", "reason": "Unschedulable", "detail": "Failed to schedule pod, all available instance types exceed limits"},
			mutate: karpenterRefused},
		{what: actions.SurgeUnservable, msg: "surge NodeClaim failed to launch",
			fields: map[string]any{"surgeClaim": "NodeClaim/general-s", "detail": "LaunchFailed: quota exceeded"},
			mutate: func(o *View) {
				o.Unservable = &surge.Unservable{Reason: surge.ReasonLaunchFailed, Object: "NodeClaim/general-s", Message: "LaunchFailed: quota exceeded"}
			}},
		{what: actions.RotationCompleted, msg: "rotation complete",
			fields: map[string]any{"outcome": "success", "mode": "surge", "drain": "10m0s", "surgeNode": "node-b", "surgeWait": "5m0s", "surgePath": "provisioned", "total": "15m0s"},
			results: []actions.Result{{Action: actions.ActionUnfreeze, Unfrozen: []string{"node-b"}},
				{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed, Released: &actions.Released{Outcome: "success", DrainingAt: "2026-11-30T11:50:00Z", SurgeWait: "5m0s"}}}},
		{what: actions.RotationCompleted, msg: "rotation complete",
			fields: map[string]any{"outcome": "success", "drain": "8m25s", "total": "15m0s",
				"prePull": map[string]any{"ended": "failed", "wait": "1m35s", "pulled": 2.0, "failed": 1.0, "unfinished": 0.0, "skipped": 3.0}},
			results: []actions.Result{{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed, Released: &actions.Released{Outcome: "success",
				DrainingAt: "2026-11-30T11:50:00Z", SurgeWait: "5m0s", SurgeNode: "node-b", PrePull: prePullRecord.String()}}}},
		{what: actions.PrePullStarted, msg: "pre-pull started",
			fields:  map[string]any{"nodeclaim": "general-a", "prepullPod": "nrc-prepull-general-a", "surgeNode": "node-b", "images": 3.0, "timeout": "7m0s"},
			results: []actions.Result{{Action: actions.ActionPrePullEnsure, Outcome: actions.Done, Changed: true, PrePullImages: 3}},
			mutate:  func(o *View) { o.Settings.PrePull.Timeout = 7 * time.Minute }},
		{what: actions.PrePullEnded, msg: "pre-pull ended",
			fields:  map[string]any{"nodeclaim": "general-a", "ended": "failed", "wait": "1m35s", "pulled": 2.0, "failed": 1.0, "unfinished": 0.0, "skipped": 3.0},
			results: []actions.Result{{Action: actions.ActionPrePullRecord, Outcome: actions.Claimed, PrePull: &actions.PrePullEnd{Record: prePullRecord, FailedImages: []string{"quay.io/org/private:1"}}}}},
		{what: actions.RotationExpired, msg: "rotation complete", fields: map[string]any{"outcome": "expired", "mode": "forceful-fallback"},
			mutate: func(o *View) {
				o.Pool.Annotations[v1alpha1.AnnotationRotationMode] = v1alpha1.RotationModeFallback
			}},
		{what: actions.WindowMissed, msg: "maintenance window closed with candidates unrotated",
			fields:  map[string]any{"windowOpenedAt": "2026-11-30T08:00:00Z", "eligible": 1.0, "inBackoffTriggered": 2.0},
			results: []actions.Result{{Action: actions.ActionWindowClear, WindowOpenedAt: "2026-11-30T08:00:00Z"}}},
		{what: actions.GovernanceLost, msg: "in-flight rotation rolled back: the NodePool left governance", fields: map[string]any{"nodeclaim": "general-a"}},
		{what: actions.GovernanceLost, msg: "in-flight rotation cannot be rolled back: the NodePool left governance after the old NodeClaim's delete",
			fields: map[string]any{"nodeclaim": "general-a"}, results: heldUngoverned},
		{what: actions.GovernanceLost, msg: "in-flight rotation ended ungoverned: its NodeClaim is gone and the NodePool left governance",
			fields: map[string]any{"nodeclaim": "general-a"}, mutate: claimGone},
		{what: actions.GovernanceLost, msg: "rotation gate released: the drain held after the NodePool left governance is over",
			fields: map[string]any{"nodeclaim": "general-a"}, results: releasedAfterHold, mutate: claimGone},
		{what: actions.RotationCompleted, msg: "rotation complete", fields: map[string]any{"outcome": "governance-lost", "mode": "surge"}, results: completedUngoverned},
		{what: actions.AnchorRestored, msg: "superseded anchor released: the rotation beside it is over", fields: map[string]any{"superseded": "general-gone"},
			results: []actions.Result{{Action: actions.ActionAnchorWrite, Outcome: actions.Claimed, Superseded: "general-gone"}}},
		{what: actions.AnchorRestored, msg: "stranded rotation re-adopted", fields: map[string]any{"nodeclaim": "general-b", "state": "draining", "superseded": "general-gone"},
			results: superseded},
		{what: actions.DrainStuck, msg: "drain exceeds terminationGracePeriod + buffer; the rotation gate stays held", fields: map[string]any{"nodeclaim": "general-a"}},
		{what: actions.PolicyInvalid, msg: "governing policy is invalid; no rotation starts", fields: map[string]any{"policy": "api", "error": "spec.prePull.enabled: no"},
			mutate: func(o *View) { o.PolicyErr = errors.New("spec.prePull.enabled: no") }},
		{what: actions.Infeasible, msg: "fatal schedule findings block rotation starts", fields: map[string]any{"findings": []any{"NoWindows: the maintenance windows never open"}},
			mutate: func(o *View) {
				o.Findings = []schedule.Finding{
					{Reason: "NoWindows", Severity: schedule.Fatal, Message: "the maintenance windows never open"},
					{Reason: "TGPUnset", Severity: schedule.Warning, Message: "terminationGracePeriod is unset"},
				}
			}},
	}
	for _, c := range cases {
		t.Run(string(c.what), func(t *testing.T) {
			h := newHarness(t)
			obs := observation(t)
			if c.mutate != nil {
				c.mutate(obs)
			}
			h.announce(t, c.what, obs, c.results...)
			got := h.one(t)
			if got.msg != c.msg {
				t.Errorf("message %q, want %q", got.msg, c.msg)
			}
			// Every state-machine line names the pool and the rotation.
			if got.kv["nodepool"] != "general" || got.kv["rotation"] != "general-a" {
				t.Errorf("line lacks the pool or rotation: %v", got.kv)
			}
			for k, want := range c.fields {
				if !reflect.DeepEqual(got.kv[k], want) {
					t.Errorf("%s = %#v, want %#v (line %v)", k, got.kv[k], want, got.kv)
				}
			}
		})
	}
}

// What the steps before a GovernanceLost, a completion and an
// AnchorRestored report, for the wording each picks.
var (
	heldUngoverned      = []actions.Result{{Action: actions.ActionPoolMirror, Outcome: actions.Claimed}}
	releasedAfterHold   = []actions.Result{{Action: actions.ActionAnchorClear, Outcome: actions.Claimed, Mirror: v1alpha1.StateGovernanceLost}}
	completedUngoverned = []actions.Result{{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed,
		Released: &actions.Released{Outcome: actions.ReleasedUngoverned, DrainingAt: "2026-11-30T11:50:00Z", SurgeWait: "5m0s"}}}
	superseded = []actions.Result{{Action: actions.ActionAnchorWrite, Outcome: actions.Claimed, Readopted: "draining", Anchored: "general-b", Superseded: "general-gone"}}
)

// prePullRecord is a pre-pull phase that ended with an image it could not
// pull.
var prePullRecord = v1alpha1.PrePullRecord{Ended: v1alpha1.PrePullFailed, Wait: 95 * time.Second, Pulled: 2, Failed: 1, Skipped: 3}

// claimGone: the anchored claim no longer exists.
func claimGone(o *View) { o.Subject = nil }

// The census of NoCandidate is logged as its fields.
func TestNoCandidateLogsTheCensus(t *testing.T) {
	h := newHarness(t)
	h.announce(t, actions.NoCandidate, observation(t))
	c, ok := h.one(t).kv["census"].(map[string]any)
	if !ok || c["total"] != 3.0 || c["candidates"] != 1.0 || c["inBackoff"] != 2.0 || c["notDue"] != 0.0 {
		t.Errorf("census = %#v", h.one(t).kv["census"])
	}
}

// Events: the type, reason, message and the object each is recorded on.
func TestEvents(t *testing.T) {
	type want struct {
		typ, reason, message string
		on                   string // pool, subject
	}
	unschedulable := func(o *View) {
		o.Placeholder = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-general-a"}}
		o.Placeholder.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}
	}
	cases := []struct {
		what    actions.Announcement
		mutate  func(*View)
		results []actions.Result
		want    *want
	}{
		{what: actions.RotationStarted, want: &want{"Normal", "RotationStarted", "rotating NodeClaim general-a (deadline 2026-12-08T12:00:00Z)", "pool"}},
		{what: actions.ForcefulFallback, mutate: func(o *View) { o.Census.Candidate.Kind = "forcefulFallback" },
			want: &want{"Warning", "ForcefulFallback", "surge-less rotation of general-a begins: its deadline 2026-12-08T12:00:00Z is nearer than t_rot", "pool"}},
		{what: actions.InsufficientHeadroom, want: &want{"Warning", "InsufficientHeadroom", "NodePool limits leave 1 of 10 for cpu; the placeholder needs 2", "pool"}},
		{what: actions.StaticNodePool, want: &want{"Warning", "StaticNodePool", "spec.replicas is set: a surge can never rotate this NodePool, so no rotation starts", "pool"}},
		{what: actions.PolicyConflict, mutate: func(o *View) {
			o.Governance = policy.Governance{Conflict: []string{"a", "b"}, Specificity: 1}
		}, want: &want{"Warning", "PolicyConflict", "RotationPolicies a, b tie at specificity 1; the NodePool is not rotated", "pool"}},
		{what: actions.PlaceholderCreated, want: &want{"Normal", "SurgeClamped", "placeholder clamped to allocatable less DaemonSet overhead for [cpu]", "subject"}},
		{what: actions.PlaceholderCreated, mutate: func(o *View) { o.Sizing.BandExceed = []corev1.ResourceName{corev1.ResourceCPU} },
			want: &want{"Warning", "SurgeClampBandExceeded", "placeholder clamped by more than 10% for [cpu]: the drained Pods may not all fit", "subject"}},
		{what: actions.PlaceholderCreated, mutate: func(o *View) {
			o.Sizing.BandExceed = []corev1.ResourceName{corev1.ResourceCPU}
			o.Sizing.Refused = []corev1.ResourceName{corev1.ResourceMemory}
		}, want: &want{"Warning", "SurgeClampRefused", "DaemonSet overhead exhausts the claim's allocatable for [memory]; the placeholder keeps its full request", "subject"}},
		{what: actions.PlaceholderCreated, mutate: func(o *View) { o.Sizing.Clamped = nil }},
		{what: actions.SurgeWaiting, mutate: unschedulable,
			want: &want{"Warning", "SurgeUnschedulable", "placeholder nrc-surge-general-a: Unschedulable: 0/3 nodes are available", "subject"}},
		{what: actions.RotationFailed,
			results: failedFor("Timeout"),
			want:    &want{"Warning", "RotationFailed", "Timeout: the surge was not ready within readyTimeout 15m0s; rolled back (retry 3, backoff until 2026-11-30T14:00:00Z)", "subject"}},
		{what: actions.RotationFailed, results: failedFor("Unschedulable"),
			want: &want{"Warning", "RotationFailed", "Unschedulable: Karpenter cannot provision the surge for the placeholder after 1m0s; rolled back (retry 3, backoff until 2026-11-30T14:00:00Z)", "subject"}},
		{what: actions.RotationFailed, results: failedFor("LaunchFailed"), mutate: func(o *View) {
			o.Unservable = &surge.Unservable{Reason: surge.ReasonLaunchFailed, Object: "NodeClaim/general-s", Message: "LaunchFailed: quota exceeded"}
		}, want: &want{"Warning", "RotationFailed", "LaunchFailed: NodeClaim/general-s failed to launch; rolled back (retry 3, backoff until 2026-11-30T14:00:00Z)", "subject"}},
		{what: actions.SurgeUnservable, mutate: karpenterRefused,
			want: &want{"Warning", "SurgeUnschedulable", "placeholder nrc-surge-general-a: Unschedulable: Failed to schedule pod, all available instance types exceed limits", "subject"}},
		{what: actions.SurgeUnservable, mutate: func(o *View) {
			o.Unservable = &surge.Unservable{Reason: surge.ReasonLaunchFailed, Object: "NodeClaim/general-s", Message: "LaunchFailed: quota exceeded"}
		}, want: &want{"Warning", "SurgeLaunchFailed", "NodeClaim/general-s: LaunchFailed: quota exceeded", "subject"}},
		{what: actions.RotationCompleted,
			results: []actions.Result{{Action: actions.ActionUnfreeze, Unfrozen: []string{"node-b"}},
				{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed, Released: &actions.Released{Outcome: "success", DrainingAt: "2026-11-30T11:50:00Z", SurgeWait: "5m0s"}}},
			want: &want{"Normal", "RotationCompleted", "old NodeClaim general-a finalized; surgePath provisioned", "pool"}},
		{what: actions.RotationCompleted, // no surge host known: no path
			results: []actions.Result{{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed, Released: &actions.Released{Outcome: "success", DrainingAt: "2026-11-30T11:50:00Z"}}},
			want:    &want{"Normal", "RotationCompleted", "old NodeClaim general-a finalized", "pool"}},
		{what: actions.RotationCompleted, results: []actions.Result{{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed, Released: &actions.Released{Outcome: "expired"}}}},
		{what: actions.GovernanceLost, want: &want{"Warning", "GovernanceLost", "rotation of general-a rolled back: the NodePool is no longer governed by exactly one valid RotationPolicy", "pool"}},
		{what: actions.GovernanceLost, results: heldUngoverned, want: &want{"Warning", "GovernanceLost",
			"rotation of general-a cannot be rolled back, its delete is issued: the NodePool is no longer governed by exactly one valid RotationPolicy; no rotation starts until it is gone, and its end is not counted as a success", "pool"}},
		{what: actions.GovernanceLost, mutate: claimGone, want: &want{"Warning", "GovernanceLost",
			"rotation of general-a ended without a success: the NodeClaim is gone and the NodePool is no longer governed by exactly one valid RotationPolicy", "pool"}},
		{what: actions.GovernanceLost, mutate: claimGone, results: releasedAfterHold}, // the hold said it
		{what: actions.RotationCompleted, results: completedUngoverned},
		{what: actions.AnchorRestored, results: superseded, want: &want{"Warning", "AnchorRestored",
			"NodePool's noderotation.io/active-rotation named NodeClaim general-gone, which is gone, while NodeClaim general-b was draining; it names general-b again and nothing new starts until that rotation ends", "pool"}},
		{what: actions.AnchorRestored, results: []actions.Result{{Action: actions.ActionAnchorWrite, Outcome: actions.Claimed, Superseded: "general-gone"}}}, // released: nothing re-adopted
		{what: actions.AnchorRestored, results: []actions.Result{{Action: actions.ActionAnchorWrite, Outcome: actions.Claimed, Readopted: "pending", Anchored: "general-a"}},
			want: &want{"Warning", "AnchorRestored", "NodePool lost its noderotation.io/active-rotation while NodeClaim general-a was pending; the rotation is re-adopted and nothing new starts until it ends", "pool"}},
		{what: actions.WindowMissed, results: []actions.Result{{Action: actions.ActionWindowClear, WindowOpenedAt: "2026-11-30T08:00:00Z"}},
			want: &want{"Warning", "WindowMissed", "the window opened at 2026-11-30T08:00:00Z closed with 3 claim(s) outstanding and no rotation completed in it", "pool"}},
		// Log-only announcements.
		{what: actions.NoCandidate}, {what: actions.SurgeReady}, {what: actions.DrainStarted}, {what: actions.RotationExpired},
		{what: actions.DrainStuck}, {what: actions.Infeasible},
		{what: actions.PolicyInvalid, mutate: func(o *View) { o.PolicyErr = errors.New("bad") }},
	}
	for _, c := range cases {
		t.Run(string(c.what), func(t *testing.T) {
			h := newHarness(t)
			obs := observation(t)
			if c.mutate != nil {
				c.mutate(obs)
			}
			h.announce(t, c.what, obs, c.results...)
			if c.want == nil {
				if len(h.rec.events) != 0 {
					t.Errorf("events %+v, want none", h.rec.events)
				}
				return
			}
			if len(h.rec.events) != 1 {
				t.Fatalf("events %+v, want one", h.rec.events)
			}
			e := h.rec.events[0]
			if e.typ != c.want.typ || e.reason != c.want.reason || e.message != c.want.message {
				t.Errorf("event %s %s %q\nwant  %s %s %q", e.typ, e.reason, e.message, c.want.typ, c.want.reason, c.want.message)
			}
			var on runtime.Object = obs.Pool
			if c.want.on == "subject" {
				on = obs.Subject
			}
			if e.obj != on {
				t.Errorf("event recorded on %T %v, want the %s", e.obj, e.obj, c.want.on)
			}
		})
	}
}

// Counters and the histogram move only with the announcement that earned
// them, by exactly one observation each.
func TestMetrics(t *testing.T) {
	const pool = "general"
	released := []actions.Result{{Action: actions.ActionUnfreeze, Unfrozen: []string{"node-b"}},
		{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed, Released: &actions.Released{Outcome: "success", DrainingAt: "2026-11-30T11:50:00Z", SurgeWait: "5m0s"}}}
	failed := []actions.Result{{Action: actions.ActionClaimState, Failure: &actions.Failure{FailedAt: "2026-11-30T12:00:00Z", RetryCount: "1"}}}
	expired := []actions.Result{{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed, Released: &actions.Released{Outcome: "expired"}}}
	type reading struct {
		success, failure, expired, fallback, missed float64
		waits, drains                               uint64
		waitSum, drainSum                           float64
	}
	read := func() reading {
		var r reading
		r.success, r.failure, r.expired = counter(metrics.Completed, pool, "success"), counter(metrics.Completed, pool, "failure"), counter(metrics.Completed, pool, "expired")
		r.fallback, r.missed = counter(metrics.ForcefulFallback, pool), counter(metrics.WindowMissed, pool)
		r.waits, r.waitSum = histogram(t, pool, "surge_wait")
		r.drains, r.drainSum = histogram(t, pool, "drain")
		return r
	}
	cases := []struct {
		what    actions.Announcement
		results []actions.Result
		mutate  func(*View)
		delta   reading
	}{
		{what: actions.RotationStarted},
		{what: actions.ForcefulFallback, mutate: func(o *View) { o.Census.Candidate.Kind = "forcefulFallback" }, delta: reading{fallback: 1}},
		{what: actions.SurgeReady, delta: reading{waits: 1, waitSum: 300}},
		{what: actions.SurgeReady, mutate: func(o *View) { delete(o.Subject.Annotations, v1alpha1.AnnotationStartedAt) }},
		{what: actions.RotationFailed, results: failed, delta: reading{failure: 1}},
		{what: actions.RotationExpired, delta: reading{expired: 1}},
		{what: actions.RotationCompleted, results: released, delta: reading{success: 1, drains: 1, drainSum: 600}},
		{what: actions.RotationCompleted, results: []actions.Result{{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed, Released: &actions.Released{
			Outcome: "success", DrainingAt: "2026-11-30T11:50:00Z", SurgeWait: "5m0s", PrePull: prePullRecord.String()}}},
			delta: reading{success: 1, drains: 1, drainSum: 600 - 95}}, // the drain runs from the pre-pull's end
		{what: actions.RotationCompleted, results: []actions.Result{{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed, Released: &actions.Released{
			Outcome: "success", DrainingAt: "2026-11-30T11:50:00Z", SurgeWait: "5m0s", PrePull: "garbled"}}},
			delta: reading{success: 1, drains: 1, drainSum: 600}}, // a record that does not parse: the drain with the phase in it
		{what: actions.RotationCompleted, results: expired, delta: reading{expired: 1}},
		{what: actions.RotationCompleted, results: completedUngoverned}, // no success, no drain figure
		{what: actions.WindowMissed, results: []actions.Result{{Action: actions.ActionWindowClear, WindowOpenedAt: "x"}}, delta: reading{missed: 1}},
		{what: actions.DrainStarted},
	}
	for _, c := range cases {
		t.Run(string(c.what), func(t *testing.T) {
			h := newHarness(t)
			obs := observation(t)
			if c.mutate != nil {
				c.mutate(obs)
			}
			before := read()
			h.announce(t, c.what, obs, c.results...)
			after := read()
			got := reading{
				success: after.success - before.success, failure: after.failure - before.failure, expired: after.expired - before.expired,
				fallback: after.fallback - before.fallback, missed: after.missed - before.missed,
				waits: after.waits - before.waits, waitSum: after.waitSum - before.waitSum,
				drains: after.drains - before.drains, drainSum: after.drainSum - before.drainSum,
			}
			if got != c.delta {
				t.Errorf("metrics moved by %+v, want %+v", got, c.delta)
			}
		})
	}
}

// surgePath is omitted, never guessed, when no path was established; so
// are the surge figures of a completion whose surge host is unknown.
func TestUnknownFiguresAreOmitted(t *testing.T) {
	h := newHarness(t)
	obs := observation(t)
	obs.SurgeHostClaim = nil
	h.announce(t, actions.SurgeReady, obs)
	if _, ok := h.one(t).kv["surgePath"]; ok {
		t.Errorf("surgePath guessed: %v", h.one(t).kv)
	}
	h = newHarness(t)
	h.announce(t, actions.RotationCompleted, observation(t),
		actions.Result{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed, Released: &actions.Released{Outcome: "success", DrainingAt: "bad", SurgeWait: "5m0s"}})
	if len(*h.lines) != 2 {
		t.Fatalf("%d lines, want the Warning about the garbled figure and the completion: %+v", len(*h.lines), *h.lines)
	}
	warn, done := (*h.lines)[0], (*h.lines)[1]
	if warn.kv["reason"] != "InvalidAnnotation" || !strings.Contains(warn.msg, `noderotation.io/draining-at="bad" is not an RFC3339 time`) {
		t.Errorf("the garbled draining-at is not reported: %+v", warn)
	}
	for _, k := range []string{"drain", "surgeNode", "surgeWait", "surgePath", "total"} {
		if _, ok := done.kv[k]; ok {
			t.Errorf("%s logged without its inputs: %v", k, done.kv)
		}
	}
}

// A completion retried after its unfreeze landed keeps its figures: the
// surge node comes from what the rotation recorded on the pool.
func TestCompletionFiguresFromTheRecord(t *testing.T) {
	h := newHarness(t)
	h.announce(t, actions.RotationCompleted, observation(t),
		actions.Result{Action: actions.ActionUnfreeze, Unfrozen: []string{}},
		actions.Result{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed, Released: &actions.Released{Outcome: "success", DrainingAt: "2026-11-30T11:50:00Z", SurgeWait: "5m0s", SurgeNode: "node-b"}})
	kv := h.one(t).kv
	for k, want := range map[string]string{"surgeNode": "node-b", "surgeWait": "5m0s", "surgePath": "provisioned", "total": "15m0s", "drain": "10m0s"} {
		if kv[k] != want {
			t.Errorf("%s = %v, want %s: %v", k, kv[k], want, kv)
		}
	}
}

// SurgeUnschedulable is said only when Karpenter is not serving the
// placeholder: past the grace period with no surge NodeClaim launched.
func TestSurgeUnschedulableOnlyWhenKarpenterDoesNotServe(t *testing.T) {
	cases := []struct {
		name    string
		age     time.Duration
		induced bool
		want    int
	}{
		{"a healthy rotation: Karpenter launched a claim", 5 * time.Minute, true, 0},
		{"within the grace period", 30 * time.Second, false, 0},
		{"past the grace period with no claim launched", 2 * time.Minute, false, 1},
	}
	for _, c := range cases {
		h := newHarness(t)
		obs := observation(t)
		obs.Placeholder = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-general-a", CreationTimestamp: metav1.NewTime(obs.Now.Add(-c.age))}}
		obs.Placeholder.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "no room"}}
		obs.InducedClaim = nil
		if c.induced {
			obs.InducedClaim = &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-s"}}
		}
		h.announce(t, actions.SurgeWaiting, obs)
		if len(h.rec.events) != c.want {
			t.Errorf("%s: %d Events, want %d", c.name, len(h.rec.events), c.want)
		}
	}
}

// A ForcefulFallback start drains in forceful-fallback mode; so does a
// pool whose rotation-mode says so.
func TestDrainStartedMode(t *testing.T) {
	cases := []struct {
		kind, poolMode string
		wrote          bool
		want           string
	}{
		{"surge", "", true, "surge"},
		{"forcefulFallback", "", true, "forceful-fallback"},
		{"forcefulFallback", "", false, "surge"}, // not this pass's start
		{"surge", v1alpha1.RotationModeFallback, false, "forceful-fallback"},
	}
	for _, c := range cases {
		h := newHarness(t)
		obs := observation(t)
		obs.Census.Candidate.Kind = c.kind
		if c.poolMode != "" {
			obs.Pool.Annotations[v1alpha1.AnnotationRotationMode] = c.poolMode
		}
		var results []actions.Result
		if c.wrote {
			results = append(results, actions.Result{Action: actions.ActionAnchorWrite, Outcome: actions.Claimed})
		}
		h.announce(t, actions.DrainStarted, obs, results...)
		if got := h.one(t).kv["mode"]; got != c.want {
			t.Errorf("%+v: mode %v", c, got)
		}
	}
}

// Level-triggered lines and Events fire on entering a condition and again
// only after it cleared, or when their message changes.
func TestDeduplication(t *testing.T) {
	h := newHarness(t)
	obs := observation(t)
	for i := 0; i < 3; i++ {
		h.announce(t, actions.InsufficientHeadroom, obs)
		h.a.endPass("general")
	}
	if len(*h.lines) != 1 || len(h.rec.events) != 1 {
		t.Fatalf("repeated condition: %d lines, %d events; want 1 and 1", len(*h.lines), len(h.rec.events))
	}
	h.a.endPass("general") // a pass without the condition clears it
	h.announce(t, actions.InsufficientHeadroom, obs)
	if len(*h.lines) != 2 || len(h.rec.events) != 2 {
		t.Fatalf("after clearing: %d lines, %d events; want 2 and 2", len(*h.lines), len(h.rec.events))
	}
	obs.Shortfall.Remaining = resource.MustParse("0")
	h.a.endPass("general")
	h.announce(t, actions.InsufficientHeadroom, obs)
	if len(*h.lines) != 3 || h.rec.events[2].message != "NodePool limits leave 0 of 10 for cpu; the placeholder needs 2" {
		t.Fatalf("a changed message re-fires: %d lines, events %+v", len(*h.lines), h.rec.events)
	}
	// Another pool's passes do not clear this pool's condition.
	h.a.endPass("other")
	h.announce(t, actions.InsufficientHeadroom, obs)
	if len(*h.lines) != 3 {
		t.Errorf("another pool's pass cleared the condition: %d lines", len(*h.lines))
	}
	// Forget drops the pool's conditions: they fire again.
	h.a.Forget("general")
	h.announce(t, actions.InsufficientHeadroom, obs)
	if len(*h.lines) != 4 || len(h.rec.events) != 4 {
		t.Errorf("after Forget: %d lines, %d events", len(*h.lines), len(h.rec.events))
	}
}

// Every deduplicated announcement fires once while its condition holds.
func TestDeduplicatedAnnouncements(t *testing.T) {
	for _, c := range []struct {
		what   actions.Announcement
		mutate func(*View)
		change func(*View)
	}{
		{actions.NoCandidate, nil, func(o *View) { o.Census.Census.InBackoff = 1 }},
		{actions.PolicyInvalid, func(o *View) { o.PolicyErr = errors.New("one") }, func(o *View) { o.PolicyErr = errors.New("two") }},
		{actions.Infeasible, nil, func(o *View) {
			o.Findings = []schedule.Finding{{Reason: "NoWindows", Severity: schedule.Fatal}}
		}},
		{actions.DrainStuck, nil, func(o *View) { o.SubjectName = "general-z" }},
		{actions.StaticNodePool, nil, nil},
		{actions.PolicyConflict, func(o *View) { o.Governance.Conflict = []string{"a", "b"} }, func(o *View) { o.Governance.Conflict = []string{"a", "c"} }},
		{actions.SurgeWaiting, func(o *View) {
			o.Placeholder = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-general-a", CreationTimestamp: metav1.NewTime(o.Now.Add(-time.Hour))}}
			o.Placeholder.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "no room"}}
			o.InducedClaim = nil
		}, func(o *View) { o.Placeholder.Status.Conditions[0].Reason = "SchedulerError" }}, // a new reason re-fires; a new message alone does not
	} {
		t.Run(string(c.what), func(t *testing.T) {
			h := newHarness(t)
			obs := observation(t)
			if c.mutate != nil {
				c.mutate(obs)
			}
			h.announce(t, c.what, obs)
			h.a.endPass("general")
			h.announce(t, c.what, obs)
			h.a.endPass("general")
			if len(*h.lines) != 1 {
				t.Fatalf("%d lines over two passes, want 1", len(*h.lines))
			}
			if c.change != nil {
				c.change(obs)
				h.announce(t, c.what, obs)
				if len(*h.lines) != 2 {
					t.Errorf("a changed condition did not re-fire: %d lines", len(*h.lines))
				}
			}
		})
	}
}

// Announcements whose subject is absent say nothing.
func TestNothingToAnnounce(t *testing.T) {
	for _, c := range []struct {
		what   actions.Announcement
		mutate func(*View)
	}{
		{actions.RotationStarted, func(o *View) { o.Census.Candidate = nil }},
		{actions.InsufficientHeadroom, func(o *View) { o.Shortfall = nil }},
		{actions.PlaceholderCreated, func(o *View) { o.Sizing = nil }},
		{actions.SurgeWaiting, func(o *View) { o.Placeholder = nil }},
		{actions.SurgeWaiting, func(o *View) {
			o.Placeholder = &corev1.Pod{}
			o.Placeholder.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
		}},
	} {
		h := newHarness(t)
		obs := observation(t)
		c.mutate(obs)
		h.announce(t, c.what, obs)
		if len(*h.lines) != 0 || len(h.rec.events) != 0 {
			t.Errorf("%s: %d lines, %d events; want none", c.what, len(*h.lines), len(h.rec.events))
		}
	}
}

func TestWarn(t *testing.T) {
	h := newHarness(t)
	pool := observation(t).Pool
	claimA := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	claimB := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	h.a.warn("general", pool, "TGPUnset", "tgp is unset", "extra", "x")
	h.a.warnKeyed("general", "ShortLead/a", claimA, "ShortLead", "short")
	h.a.warnKeyed("general", "ShortLead/b", claimB, "ShortLead", "short")
	h.a.warnKeyed("general", "ShortLead/a", claimA, "ShortLead", "short") // same pass, same key: once
	want := []event{{pool, "Warning", "TGPUnset", "tgp is unset"}, {claimA, "Warning", "ShortLead", "short"}, {claimB, "Warning", "ShortLead", "short"}}
	if !reflect.DeepEqual(h.rec.events, want) {
		t.Errorf("events %+v", h.rec.events)
	}
	l := (*h.lines)[0]
	if l.msg != "tgp is unset" || l.kv["nodepool"] != "general" || l.kv["reason"] != "TGPUnset" || l.kv["extra"] != "x" || len(*h.lines) != 3 {
		t.Errorf("lines %+v", *h.lines)
	}
}

// Without a recorder the announcer still logs.
func TestNoRecorder(t *testing.T) {
	h := newHarness(t)
	h.a.Recorder = nil
	h.announce(t, actions.GovernanceLost, observation(t))
	if len(*h.lines) != 1 {
		t.Errorf("%d lines", len(*h.lines))
	}
}

func TestUnknownAnnouncementIsAnError(t *testing.T) {
	h := newHarness(t)
	err := h.a.Earned(observation(t), []actions.Earned{{What: "Bogus"}})
	if err == nil || err.Error() != `announcement "Bogus" has no handler` {
		t.Errorf("error %v", err)
	}
	if len(*h.lines) != 0 || len(h.rec.events) != 0 {
		t.Error("an unknown announcement said something")
	}
}

// Check passes for the shipped handlers and fails, naming it, when an
// announcement has no handler or a handler answers no announcement.
func TestCheck(t *testing.T) {
	if err := Check(); err != nil {
		t.Fatalf("shipped handlers: %v", err)
	}
	for _, w := range actions.Announcements {
		if handlers[w] == nil {
			t.Errorf("%s has no handler", w)
		}
	}
	saved := handlers[actions.DrainStuck]
	delete(handlers, actions.DrainStuck)
	err := Check()
	handlers[actions.DrainStuck] = saved
	if err == nil || err.Error() != `announcement "DrainStuck" has no handler` {
		t.Errorf("missing handler: %v", err)
	}
	handlers["Extra"] = (*Announcer).drainStuck
	err = Check()
	delete(handlers, "Extra")
	if err == nil || err.Error() != `handler for "Extra", which no step can announce` {
		t.Errorf("extra handler: %v", err)
	}
	if err := Check(); err != nil {
		t.Fatalf("handlers not restored: %v", err)
	}
}

// The sweep's other lines, worded here, under the logger name "sweep".
func TestSweepLines(t *testing.T) {
	h := newHarness(t)
	h.a.SweptPlaceholder("ph-b", "claim-b")
	h.a.SweptPrePullPod("nrc-prepull-claim-b", "claim-b")
	h.a.SweptNode("node-b", "unfroze and uncordoned")
	h.a.SweptMirror("pool-orphan")
	h.a.SweepFailed(errors.New("boom"), "listing nodes")
	h.a.SweepFailed(errors.New("boom"), "skipped: cannot list NodePools")
	want := []string{
		"startup sweep deleted a placeholder no anchor references",
		"startup sweep deleted a pre-pull Pod no anchor references",
		"startup sweep unfroze and uncordoned a node no anchor references",
		"startup sweep removed an orphaned active-rotation-state",
		"startup sweep: listing nodes",
		"startup sweep skipped: cannot list NodePools",
	}
	if len(*h.lines) != len(want) {
		t.Fatalf("lines %+v", *h.lines)
	}
	for i, l := range *h.lines {
		if l.msg != want[i] || l.kv["logger"] != "sweep" {
			t.Errorf("line %d: %+v, want %q under sweep", i, l, want[i])
		}
	}
	if l := (*h.lines)[0]; l.kv["placeholder"] != "ph-b" || l.kv["nodeclaim"] != "claim-b" {
		t.Errorf("placeholder line %+v", l)
	}
	if l := (*h.lines)[1]; l.kv["pod"] != "nrc-prepull-claim-b" || l.kv["nodeclaim"] != "claim-b" {
		t.Errorf("pre-pull Pod line %+v", l)
	}
	if l := (*h.lines)[4]; l.kv["error"] != "boom" {
		t.Errorf("failure line %+v", l)
	}
}

func TestSweptClaim(t *testing.T) {
	h := newHarness(t)
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "swept-a", Labels: map[string]string{karpv1.NodePoolLabelKey: "swept"}}}
	before := counter(metrics.Completed, "swept", "failure")
	h.a.SweptClaim(claim, "draining")
	if got := counter(metrics.Completed, "swept", "failure") - before; got != 1 {
		t.Errorf("completed{failure} moved by %v", got)
	}
	if len(*h.lines) != 2 {
		t.Fatalf("%d lines, want the sweep's and the failure line: %+v", len(*h.lines), *h.lines)
	}
	if l := (*h.lines)[0]; l.msg != "startup sweep failed a claim no anchor owns" || l.kv["logger"] != "sweep" || l.kv["nodeclaim"] != "swept-a" || l.kv["from"] != "draining" {
		t.Errorf("sweep line %+v", l)
	}
	if l := (*h.lines)[1]; l.msg != "rotation attempt failed" || l.kv["reason"] != "startupSweep" || l.kv["nodeclaim"] != "swept-a" || l.kv["from"] != "draining" {
		t.Errorf("line %+v", l)
	}
	want := []event{{claim, "Warning", "RotationFailed", "startup sweep: the claim was draining with no anchor owning it; marked failed"}}
	if !reflect.DeepEqual(h.rec.events, want) {
		t.Errorf("events %+v", h.rec.events)
	}
}

// The scheduler's message carries node counts that change from pass to
// pass: SurgeUnschedulable is deduplicated by its reason alone.
func TestSurgeUnschedulableIgnoresMessageChurn(t *testing.T) {
	h := newHarness(t)
	obs := observation(t)
	obs.Placeholder = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-general-a", CreationTimestamp: metav1.NewTime(obs.Now.Add(-time.Hour))}}
	obs.InducedClaim = nil
	for i := 0; i < 3; i++ {
		obs.Placeholder.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: fmt.Sprintf("0/%d nodes are available", 10+i)}}
		h.announce(t, actions.SurgeWaiting, obs)
		h.a.endPass("general")
	}
	if len(h.rec.events) != 1 {
		t.Errorf("%d Events, want 1", len(h.rec.events))
	}
}

// WindowEnding says once per occurrence why a pool with a candidate does
// not start near the close, with the figures the hold was judged by.
func TestWindowEndingSaidOncePerOccurrence(t *testing.T) {
	h := newHarness(t)
	obs := observation(t)
	closes := now.Add(9 * time.Minute)
	obs.WindowEnd = WindowEnd{Forecast: 14 * time.Minute, Learned: true, Close: closes, Left: 9 * time.Minute}
	for range 3 {
		h.announce(t, actions.WindowEnding, obs)
		h.a.endPass("general")
	}
	l := h.one(t)
	if l.msg != "not starting: too little of the window is left for the rotation's forecast" ||
		l.kv["left"] != "9m0s" || l.kv["forecast"] != "14m0s" || l.kv["learned"] != true || l.kv["candidate"] != "general-a" {
		t.Errorf("line %q %v", l.msg, l.kv)
	}
	if len(h.rec.events) != 0 {
		t.Errorf("events %+v: a log line only", h.rec.events)
	}
	obs.WindowEnd.Close = closes.Add(24 * time.Hour) // the next occurrence
	h.announce(t, actions.WindowEnding, obs)
	if len(*h.lines) != 2 {
		t.Errorf("%d lines: the next occurrence's hold is said again", len(*h.lines))
	}
}

// The pass that fails fast says Karpenter's message even when the
// placeholder's condition was said first; and only once itself.
func TestSurgeUnschedulableCarriesKarpenterWordOnFailFast(t *testing.T) {
	h := newHarness(t)
	obs := observation(t)
	obs.Placeholder = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-general-a", CreationTimestamp: metav1.NewTime(obs.Now.Add(-2 * time.Minute))}}
	obs.Placeholder.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}
	obs.InducedClaim = nil
	h.announce(t, actions.SurgeWaiting, obs)
	h.a.endPass("general")
	karpenterRefused(obs)
	h.announce(t, actions.SurgeUnservable, obs)
	h.announce(t, actions.SurgeUnservable, obs)
	if len(h.rec.events) != 2 || !strings.Contains(h.rec.events[1].message, "Failed to schedule pod") {
		t.Errorf("events %+v: want the condition's, then Karpenter's", h.rec.events)
	}
}

// The pre-pull phase's end: the prepull phase timed, a Warning naming the
// images the node could not pull, then the Normal summary, on the claim;
// a pass whose record raced says nothing and observes nothing.
func TestPrePullEndedTimesThePhaseAndNamesWhatFailed(t *testing.T) {
	h := newHarness(t)
	obs := observation(t)
	pool := obs.Pool.Name
	before, sumBefore := histogram(t, pool, "prepull")
	h.announce(t, actions.PrePullEnded, obs, actions.Result{Action: actions.ActionPrePullRecord, Outcome: actions.Claimed,
		PrePull: &actions.PrePullEnd{Record: prePullRecord, FailedImages: []string{"quay.io/org/private:1", "registry.internal/x:2"}}})
	if n, sum := histogram(t, pool, "prepull"); n != before+1 || sum-sumBefore != 95 {
		t.Errorf("prepull observations %d (+%v s), want one more of 95 s", n-before, sum-sumBefore)
	}
	ev := h.rec.events
	if len(ev) != 2 || ev[0].typ != "Warning" || ev[0].reason != "PrePullImagesFailed" || ev[1].typ != "Normal" || ev[1].reason != "PrePullEnded" {
		t.Fatalf("events %+v", ev)
	}
	if want := "the surge node could not pull quay.io/org/private:1, registry.internal/x:2; the drain starts without them"; ev[0].message != want {
		t.Errorf("warning %q, want %q", ev[0].message, want)
	}
	if want := "pre-pull failed after 1m35s: 2 pulled, 1 failed, 0 unfinished, 3 skipped; the drain starts"; ev[1].message != want {
		t.Errorf("summary %q, want %q", ev[1].message, want)
	}
	if ev[0].obj != obs.Subject || ev[1].obj != obs.Subject {
		t.Error("the pre-pull Events are not on the rotating claim")
	}

	raced := newHarness(t)
	raced.announce(t, actions.PrePullEnded, obs, actions.Result{Action: actions.ActionPrePullRecord, Outcome: actions.Raced})
	if n, _ := histogram(t, pool, "prepull"); n != before+1 || len(raced.rec.events) != 0 || len(*raced.lines) != 0 {
		t.Errorf("a raced record announced: %d observations, events %+v, lines %+v", n-before, raced.rec.events, *raced.lines)
	}
}

// A refused pre-pull Pod is a Warning on the claim, once however many
// passes of the phase ask again; a pass whose create was not refused says
// nothing.
func TestPrePullRefusedIsSaidOnce(t *testing.T) {
	h := newHarness(t)
	obs := observation(t)
	refused := actions.Result{Action: actions.ActionPrePullEnsure, Outcome: actions.Done, PrePullRefused: `apps/nrc-prepull-general-a: pods "nrc-prepull-general-a" is forbidden: exceeded quota`}
	for i := 0; i < 3; i++ {
		h.announce(t, actions.PrePullRefused, obs, refused)
	}
	h.announce(t, actions.PrePullRefused, obs, actions.Result{Action: actions.ActionPrePullEnsure, Outcome: actions.Done})
	ev := h.rec.events
	if len(ev) != 1 || ev[0].typ != "Warning" || ev[0].reason != "PrePullRefused" || ev[0].obj != obs.Subject {
		t.Fatalf("events %+v, want one PrePullRefused Warning on the claim", ev)
	}
	if want := `the API server refused pre-pull Pod apps/nrc-prepull-general-a: pods "nrc-prepull-general-a" is forbidden: exceeded quota; the drain starts without its images (at prePull.timeout when no pre-pull Pod was made)`; ev[0].message != want {
		t.Errorf("message %q, want %q", ev[0].message, want)
	}
}

// A pre-pull record that does not parse is named in a Warning, never
// dropped in silence.
func TestAGarbledPrePullRecordIsNamed(t *testing.T) {
	h := newHarness(t)
	h.announce(t, actions.RotationCompleted, observation(t), actions.Result{Action: actions.ActionAnchorRelease, Outcome: actions.Claimed,
		Released: &actions.Released{Outcome: "success", DrainingAt: "2026-11-30T11:50:00Z", SurgeWait: "5m0s", PrePull: "garbled"}})
	var warned bool
	for _, e := range h.rec.events {
		warned = warned || e.reason == "InvalidAnnotation" && strings.Contains(e.message, v1alpha1.AnnotationPrePull+`="garbled"`)
	}
	if !warned {
		t.Errorf("events %+v: no InvalidAnnotation naming %s", h.rec.events, v1alpha1.AnnotationPrePull)
	}
}

// DisruptionBudget says once, while the same budget and disruptions hold
// the pool, that its candidate waits, naming the budget and its end in the
// log line and in a Normal Event on the NodePool; a change of what holds it
// is said again.
func TestDisruptionBudgetSaidOnceWhileItHolds(t *testing.T) {
	h := newHarness(t)
	obs := observation(t)
	sched, d := "0 9 * * mon-fri", metav1.Duration{Duration: 8 * time.Hour}
	np := &karpv1.NodePool{}
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "0", Schedule: &sched, Duration: &d}}
	obs.Budget = budget.Of(np, 4, time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	obs.MaxUnavailable = 1
	for range 3 {
		h.announce(t, actions.DisruptionBudget, obs)
		h.a.endPass("general")
	}
	l := h.one(t)
	if l.msg != "not starting: the pool's disruption budget is used" || fmt.Sprint(l.kv["allowed"]) != "0" || l.kv["until"] != "2026-12-07T17:00:00Z" ||
		l.kv["budget"] != `nodes=0 (schedule "0 9 * * mon-fri" for 8h)` || l.kv["candidate"] != "general-a" {
		t.Errorf("line %q %v", l.msg, l.kv)
	}
	if len(h.rec.events) != 1 || h.rec.events[0].reason != "DisruptionBudget" ||
		!strings.Contains(h.rec.events[0].message, `NodePool budget nodes=0 (schedule "0 9 * * mon-fri" for 8h), until 2026-12-07 17:00 UTC`) {
		t.Errorf("events %+v: want one DisruptionBudget naming the budget and its end", h.rec.events)
	}
	obs.Disrupted = []string{"general-b"} // Karpenter begins a disruption: what holds it changed
	h.announce(t, actions.DisruptionBudget, obs)
	if len(h.rec.events) != 2 {
		t.Errorf("%d Events: a change of what holds the pool is said again", len(h.rec.events))
	}
}
