package announce

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	_ "github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// captured is a log line: its message and key/value pairs as text.
type captured struct{ msg, kv string }

func newAnnouncer() (*Announcer, *[]captured, *record.FakeRecorder) {
	var lines []captured
	log := funcr.New(func(prefix, args string) {
		msg := args
		if i := strings.Index(args, `"msg"=`); i >= 0 {
			rest := args[i+7:]
			msg = rest[:strings.Index(rest, `"`)]
		}
		lines = append(lines, captured{msg: msg, kv: args})
	}, funcr.Options{})
	rec := record.NewFakeRecorder(100)
	return New(log, rec), &lines, rec
}

func pass() *actions.Pass {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-a", CreationTimestamp: metav1.NewTime(now.Add(-6 * 24 * time.Hour)),
		Annotations: map[string]string{v1alpha1.AnnotationStartedAt: now.Add(-5 * time.Minute).Format(time.RFC3339)}}}
	pool := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general", Annotations: map[string]string{}}}
	settings, _ := policy.Resolve(v1alpha1.RotationPolicySpec{})
	sz := surge.Sizing{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, Clamped: []corev1.ResourceName{corev1.ResourceCPU}}
	obs := &observe.Observation{
		Now: now, Pool: pool, Subject: claim, SubjectName: claim.Name, Settings: settings, Sizing: &sz,
		Candidate: &observe.Candidate{Claim: claim, Kind: "surge", Deadline: now.Add(8 * 24 * time.Hour), Age: 6 * 24 * time.Hour},
		OldNode:   &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
		SurgeHost: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}},
		SurgeHostClaim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-b", CreationTimestamp: metav1.NewTime(now.Add(-4 * time.Minute))},
			Status: karpv1.NodeClaimStatus{NodeName: "node-b"}},
		Shortfall: &surge.Shortfall{Resource: corev1.ResourceCPU, Want: resource.MustParse("2"), Remaining: resource.MustParse("1"), Limit: resource.MustParse("10")},
		Census:    observe.Census{Total: 3, Candidates: 1, InBackoff: 2},
	}
	obs.Claims = []karpv1.NodeClaim{*claim, *obs.SurgeHostClaim}
	return &actions.Pass{Obs: obs}
}

// The §4.2 state-machine lines, each with its exact message and key fields.
func TestLogLinesHaveTheExactTexts(t *testing.T) {
	cases := []struct {
		what, msg string
		fields    []string
		results   []actions.Result
	}{
		{"RotationStarted", "rotation candidate selected", []string{`"nodeclaim"="general-a"`, `"age"=`, `"deadline"=`, `"surgeless"=false`}, nil},
		{"ForcefulFallback", "rotation candidate selected", []string{`"surgeless"=true`}, nil},
		{"NoCandidate", "no rotation candidate", []string{`"reason"=`, `"census"=`}, nil},
		{"PlaceholderCreated", "surge placeholder created", []string{`"placeholder"="nrc-surge-general-a"`, `"requests"=`, `"excluded"=`, `"clamped"=`}, nil},
		{"InsufficientHeadroom", "insufficient limits headroom; cannot surge", []string{`"candidate"="general-a"`, `"resource"="cpu"`, `"want"="2"`, `"remaining"="1"`, `"limit"="10"`}, nil},
		{"SurgeReady", "surge node ready", []string{`"surgeNode"="node-b"`, `"surgeWait"="5m0s"`, `"surgePath"="provisioned"`}, nil},
		{"DrainStarted", "drain started", []string{`"node"="node-a"`, `"mode"="surge"`}, nil},
		{"RotationFailed", "rotation attempt failed", []string{`"reason"="readyTimeout"`, `"readyTimeout"="15m0s"`, `"retryCount"="2"`, `"backoffUntil"="2026-11-30T13:00:00Z"`},
			[]actions.Result{{Action: "claim-state", Values: map[string]string{"claim:" + v1alpha1.AnnotationRetryCount: "2", "claim:" + v1alpha1.AnnotationFailedAt: "2026-11-30T12:00:00Z"}}}},
		{"RotationCompleted", "rotation complete", []string{`"mode"="surge"`, `"drain"="10m0s"`, `"surgeNode"="node-b"`, `"surgeWait"="5m0s"`, `"surgePath"="provisioned"`, `"total"="15m0s"`},
			[]actions.Result{{Action: "unfreeze", Values: map[string]string{"nodes": "node-b"}},
				{Action: "anchor-release", Values: map[string]string{"outcome": "success", "drainingAt": "2026-11-30T11:50:00Z", "surgeWait": "5m0s"}}}},
		{"WindowMissed", "maintenance window closed with candidates unrotated", []string{`"windowOpenedAt"="2026-11-30T08:00:00Z"`, `"eligible"=1`, `"inBackoffTriggered"=2`},
			[]actions.Result{{Action: "window-clear", Values: map[string]string{"windowOpenedAt": "2026-11-30T08:00:00Z"}}}},
	}
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			a, lines, _ := newAnnouncer()
			p := pass()
			p.Results = c.results
			if c.what == "ForcefulFallback" {
				p.Obs.Candidate.Kind = "forcefulFallback"
			}
			a.Announce(context.Background(), c.what, p)
			if len(*lines) != 1 {
				t.Fatalf("%d lines: %+v", len(*lines), *lines)
			}
			got := (*lines)[0]
			if got.msg != c.msg {
				t.Errorf("message %q, want %q", got.msg, c.msg)
			}
			for _, f := range c.fields {
				if !strings.Contains(got.kv, f) {
					t.Errorf("line lacks %s: %s", f, got.kv)
				}
			}
		})
	}
}

// surgePath is omitted, never guessed, when no path was established.
func TestSurgePathOmittedWhenUnknown(t *testing.T) {
	a, lines, _ := newAnnouncer()
	p := pass()
	p.Obs.SurgeHostClaim = nil
	a.Announce(context.Background(), "SurgeReady", p)
	if strings.Contains((*lines)[0].kv, "surgePath") {
		t.Errorf("surgePath guessed: %s", (*lines)[0].kv)
	}
}

// Level-triggered lines and Events fire on entering a condition and again
// only after it cleared.
func TestDeduplication(t *testing.T) {
	a, lines, rec := newAnnouncer()
	p := pass()
	for i := 0; i < 3; i++ {
		a.Announce(context.Background(), "InsufficientHeadroom", p)
		a.EndPass("general")
	}
	if len(*lines) != 1 || len(rec.Events) != 1 {
		t.Fatalf("repeated condition: %d lines, %d events; want 1 and 1", len(*lines), len(rec.Events))
	}
	a.EndPass("general") // a pass without the condition clears it
	a.Announce(context.Background(), "InsufficientHeadroom", p)
	if len(*lines) != 2 || len(rec.Events) != 2 {
		t.Fatalf("after clearing: %d lines, %d events; want 2 and 2", len(*lines), len(rec.Events))
	}
	p.Obs.Shortfall.Remaining = resource.MustParse("0")
	a.EndPass("general")
	a.Announce(context.Background(), "InsufficientHeadroom", p)
	if len(*lines) != 3 {
		t.Fatalf("a changed message re-fires: %d lines", len(*lines))
	}
	ev := <-rec.Events
	if !strings.HasPrefix(ev, "Warning InsufficientHeadroom ") {
		t.Errorf("event %q", ev)
	}
}
