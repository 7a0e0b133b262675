package announce

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// Announcer implements actions.Announcer with logs and Events.
type Announcer struct {
	Log      logr.Logger
	Recorder record.EventRecorder
	seen     *dedup
}

// New returns an announcer.
func New(log logr.Logger, rec record.EventRecorder) *Announcer {
	return &Announcer{Log: log, Recorder: rec, seen: newDedup()}
}

// EndPass clears the pool's level-triggered conditions not re-asserted in
// the pass that just ended, so they re-fire when they return.
func (a *Announcer) EndPass(pool string) { a.seen.endPass(pool) }

// Forget drops a deleted pool's state.
func (a *Announcer) Forget(pool string) { a.seen.forget(pool) }

// Warn emits a deduplicated Warning Event with a log line.
func (a *Announcer) Warn(pool string, obj runtime.Object, reason, msg string, kv ...any) {
	a.WarnKeyed(pool, reason, obj, reason, msg, kv...)
}

// WarnKeyed is Warn with an explicit deduplication key, for a condition that
// can hold for several objects of one pool at once (e.g. ShortLead claims).
func (a *Announcer) WarnKeyed(pool, key string, obj runtime.Object, reason, msg string, kv ...any) {
	if a.seen.enter(pool, "warn:"+key, msg) {
		a.event(obj, corev1.EventTypeWarning, reason, msg)
		a.Log.Info(msg, append([]any{"nodepool", pool, "reason", reason}, kv...)...)
	}
}

func (a *Announcer) event(obj runtime.Object, typ, reason, msg string) {
	if a.Recorder != nil && obj != nil {
		a.Recorder.Event(obj, typ, reason, msg)
	}
}

// Announce emits what's log line and Event (§4.2).
func (a *Announcer) Announce(_ context.Context, what string, p *actions.Pass) {
	o := p.Obs
	pool := o.Pool.Name
	log := a.Log.WithValues("nodepool", pool, "rotation", p.Claim())
	switch what {
	case "RotationStarted", "ForcefulFallback":
		c := o.Candidate
		if c == nil {
			return
		}
		surgeless := what == "ForcefulFallback"
		if surgeless {
			metrics.ForcefulFallback.WithLabelValues(pool).Inc()
		}
		log.Info("rotation candidate selected", "nodeclaim", c.Claim.Name, "age", c.Age.Round(time.Second).String(),
			"deadline", c.Deadline.UTC().Format(time.RFC3339), "surgeless", surgeless)
		if surgeless {
			a.event(o.Pool, corev1.EventTypeWarning, "ForcefulFallback", fmt.Sprintf("surge-less rotation of %s begins: its deadline %s is nearer than t_rot", c.Claim.Name, c.Deadline.UTC().Format(time.RFC3339)))
		} else {
			a.event(o.Pool, corev1.EventTypeNormal, "RotationStarted", fmt.Sprintf("rotating NodeClaim %s (deadline %s)", c.Claim.Name, c.Deadline.UTC().Format(time.RFC3339)))
		}
	case "NoCandidate":
		reason, census := noCandidateReason(o.Census), o.Census
		if a.seen.enter(pool, what, fmt.Sprintf("%s %+v", reason, census)) {
			log.Info("no rotation candidate", "reason", reason, "census", census)
		}
	case "InsufficientHeadroom":
		s := o.Shortfall
		if s == nil {
			return
		}
		msg := fmt.Sprintf("NodePool limits leave %s of %s for %s; the placeholder needs %s", s.Remaining.String(), s.Limit.String(), s.Resource, s.Want.String())
		if a.seen.enter(pool, what, msg) {
			log.Info("insufficient limits headroom; cannot surge", "candidate", p.Claim(), "resource", string(s.Resource),
				"want", s.Want.String(), "remaining", s.Remaining.String(), "limit", s.Limit.String())
			a.event(o.Pool, corev1.EventTypeWarning, "InsufficientHeadroom", msg)
		}
	case "StaticNodePool":
		a.Warn(pool, o.Pool, what, "spec.replicas is set: a surge can never rotate this NodePool, so no rotation starts")
	case "PolicyConflict":
		a.Warn(pool, o.Pool, what, fmt.Sprintf("RotationPolicies %s tie at specificity %d; the NodePool is not rotated", strings.Join(o.Governance.Conflict, ", "), o.Governance.Specificity))
	case "PolicyInvalid":
		if a.seen.enter(pool, what, fmt.Sprint(o.PolicyErr)) {
			log.Info("governing policy is invalid; no rotation starts", "policy", o.Governance.Policy.Name, "error", fmt.Sprint(o.PolicyErr))
		}
	case "Infeasible":
		a.infeasible(log, pool, o)
	case "PlaceholderCreated":
		a.placeholderCreated(log, p)
	case "SurgeWaiting":
		a.surgeWaiting(log, p)
	case "SurgeReady":
		log.Info("surge node ready", a.surgeFields(p, p.Now())...)
		if started, err := time.Parse(time.RFC3339, o.Subject.Annotations[v1alpha1.AnnotationStartedAt]); err == nil {
			metrics.Duration.WithLabelValues(pool, "surge_wait").Observe(p.Now().Sub(started).Seconds())
		}
	case "DrainStarted":
		a.drainStarted(log, p)
	case "RotationFailed":
		a.rotationFailed(log, p)
	case "RotationExpired":
		metrics.Completed.WithLabelValues(pool, "expired").Inc()
		log.Info("rotation complete", "outcome", "expired", "mode", mode(o.Pool.Annotations[v1alpha1.AnnotationRotationMode]))
	case "RotationCompleted":
		a.rotationCompleted(log, p)
	case "GovernanceLost":
		log.Info("in-flight rotation rolled back: the NodePool left governance")
		a.event(o.Pool, corev1.EventTypeWarning, "GovernanceLost", fmt.Sprintf("rotation of %s rolled back: the NodePool is no longer governed by exactly one valid RotationPolicy", p.Claim()))
	case "WindowMissed":
		a.windowMissed(log, p)
	case "DrainStuck":
		if a.seen.enter(pool, what, p.Claim()) {
			log.Info("drain exceeds terminationGracePeriod + buffer; the rotation gate stays held", "nodeclaim", p.Claim())
		}
	}
}

func mode(m string) string {
	if m == v1alpha1.RotationModeFallback {
		return "forceful-fallback"
	}
	return "surge"
}

func noCandidateReason(c observe.Census) string {
	switch {
	case c.Total == 0:
		return "the NodePool has no NodeClaims"
	case c.InBackoff > 0:
		return "every due claim is inside its retryBackoff"
	case c.NotDue+c.NoDeadline == c.Total:
		return "no claim is past its age threshold"
	}
	return "no claim is eligible"
}

func (a *Announcer) infeasible(log logr.Logger, pool string, o *observe.Observation) {
	var reasons []string
	for _, f := range o.Findings {
		if f.Severity == "Fatal" {
			reasons = append(reasons, f.Reason+": "+f.Message)
		}
	}
	if a.seen.enter(pool, "Infeasible", strings.Join(reasons, "; ")) {
		log.Info("fatal schedule findings block rotation starts", "findings", reasons)
	}
}

func (a *Announcer) placeholderCreated(log logr.Logger, p *actions.Pass) {
	o := p.Obs
	if o.Sizing == nil {
		return
	}
	s := o.Sizing
	log.Info("surge placeholder created", "placeholder", surge.PlaceholderName(p.Claim()), "requests", s.Requests,
		"excluded", s.Excluded, "clamped", s.Clamped, "refused", s.Refused, "bandExceeded", s.BandExceed, "clampLimit", s.Limit)
	switch {
	case len(s.Refused) > 0:
		a.event(o.Subject, corev1.EventTypeWarning, "SurgeClampRefused", fmt.Sprintf("DaemonSet overhead exhausts the claim's allocatable for %v; the placeholder keeps its full request", s.Refused))
	case len(s.BandExceed) > 0:
		a.event(o.Subject, corev1.EventTypeWarning, "SurgeClampBandExceeded", fmt.Sprintf("placeholder clamped by more than %.0f%% for %v: the drained Pods may not all fit", surge.ClampBand*100, s.BandExceed))
	case len(s.Clamped) > 0:
		a.event(o.Subject, corev1.EventTypeNormal, "SurgeClamped", fmt.Sprintf("placeholder clamped to allocatable less DaemonSet overhead for %v", s.Clamped))
	}
}

func (a *Announcer) surgeWaiting(log logr.Logger, p *actions.Pass) {
	ph := p.Obs.Placeholder
	if ph == nil {
		return
	}
	for _, c := range ph.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			if a.seen.enter(p.Obs.Pool.Name, "SurgeUnschedulable", c.Reason+c.Message) {
				log.Info("surge placeholder is not schedulable", "placeholder", ph.Name, "reason", c.Reason, "detail", c.Message)
				a.event(p.Obs.Subject, corev1.EventTypeWarning, "SurgeUnschedulable", fmt.Sprintf("placeholder %s: %s: %s", ph.Name, c.Reason, c.Message))
			}
			return
		}
	}
}

// surgeFields are the surge figures of the surge-ready line; surgePath is
// omitted, never guessed, when the host's claim is unknown.
func (a *Announcer) surgeFields(p *actions.Pass, now time.Time) []any {
	o := p.Obs
	kv := []any{}
	started, _ := time.Parse(time.RFC3339, o.Subject.Annotations[v1alpha1.AnnotationStartedAt])
	if o.SurgeHost != nil {
		kv = append(kv, "surgeNode", o.SurgeHost.Name)
	}
	if !started.IsZero() {
		kv = append(kv, "surgeWait", now.Sub(started).Round(time.Second).String())
	}
	if path := surge.Path(o.SurgeHostClaim, started); path != "" {
		kv = append(kv, "surgePath", path)
	}
	return kv
}

func (a *Announcer) drainStarted(log logr.Logger, p *actions.Pass) {
	node := ""
	if p.Obs.OldNode != nil {
		node = p.Obs.OldNode.Name
	}
	m := mode(p.Obs.Pool.Annotations[v1alpha1.AnnotationRotationMode])
	if _, ok := p.Last("anchor-write"); ok && p.Obs.Candidate != nil && p.Obs.Candidate.Kind == "forcefulFallback" {
		m = "forceful-fallback"
	}
	log.Info("drain started", "node", node, "mode", m)
}

func (a *Announcer) rotationFailed(log logr.Logger, p *actions.Pass) {
	res, _ := p.Last("claim-state")
	retry := res.Values["claim:"+v1alpha1.AnnotationRetryCount]
	failedAt, _ := time.Parse(time.RFC3339, res.Values["claim:"+v1alpha1.AnnotationFailedAt])
	var count int
	fmt.Sscan(retry, &count)
	wait, _ := p.Obs.Settings.Calendar.RetryWait(failedAt, p.Obs.Settings.RetryBackoff, count)
	metrics.Completed.WithLabelValues(p.Obs.Pool.Name, "failure").Inc()
	log.Info("rotation attempt failed", "reason", "readyTimeout", "readyTimeout", p.Obs.Settings.ReadyTimeout.String(),
		"retryCount", retry, "backoffUntil", failedAt.Add(wait).UTC().Format(time.RFC3339))
	a.event(p.Obs.Subject, corev1.EventTypeWarning, "RotationFailed",
		fmt.Sprintf("the surge was not ready within readyTimeout %s; rolled back (retry %s, backoff until %s)", p.Obs.Settings.ReadyTimeout, retry, failedAt.Add(wait).UTC().Format(time.RFC3339)))
}

func (a *Announcer) rotationCompleted(log logr.Logger, p *actions.Pass) {
	res, _ := p.Last("anchor-release")
	v := res.Values
	if v["outcome"] != "success" {
		metrics.Completed.WithLabelValues(p.Obs.Pool.Name, "expired").Inc()
		log.Info("rotation complete", "outcome", "expired", "mode", mode(v["mode"]))
		return
	}
	metrics.Completed.WithLabelValues(p.Obs.Pool.Name, "success").Inc()
	kv := []any{"outcome", "success", "mode", mode(v["mode"])}
	drainingAt, err := time.Parse(time.RFC3339, v["drainingAt"])
	if err == nil {
		kv = append(kv, "drain", p.Now().Sub(drainingAt).Round(time.Second).String())
		metrics.Duration.WithLabelValues(p.Obs.Pool.Name, "drain").Observe(p.Now().Sub(drainingAt).Seconds())
	}
	path := ""
	if host := surgeHostAtCompletion(p); host != "" {
		kv = append(kv, "surgeNode", host)
		if wait, err := time.ParseDuration(v["surgeWait"]); err == nil && !drainingAt.IsZero() {
			kv = append(kv, "surgeWait", wait.String())
			path = surge.Path(claimOnNode(p.Obs, host), drainingAt.Add(-wait))
			if path != "" {
				kv = append(kv, "surgePath", path)
			}
			kv = append(kv, "total", p.Now().Sub(drainingAt.Add(-wait)).Round(time.Second).String())
		}
	}
	log.Info("rotation complete", kv...)
	msg := fmt.Sprintf("old NodeClaim %s finalized", p.Claim())
	if path != "" {
		msg += "; surgePath " + path
	}
	a.event(p.Obs.Pool, corev1.EventTypeNormal, "RotationCompleted", msg)
}

func (a *Announcer) windowMissed(log logr.Logger, p *actions.Pass) {
	res, _ := p.Last("window-clear")
	c := p.Obs.Census
	metrics.WindowMissed.WithLabelValues(p.Obs.Pool.Name).Inc()
	log.Info("maintenance window closed with candidates unrotated", "windowOpenedAt", res.Values["windowOpenedAt"],
		"eligible", c.Candidates, "inBackoffTriggered", c.InBackoff)
	a.event(p.Obs.Pool, corev1.EventTypeWarning, "WindowMissed",
		fmt.Sprintf("the window opened at %s closed with %d claim(s) outstanding and no rotation completed in it", res.Values["windowOpenedAt"], c.Outstanding()))
}

// SweptClaim alerts on a claim the startup sweep failed: pending or
// draining with no anchor, which no crash point produces.
func (a *Announcer) SweptClaim(claim *karpv1.NodeClaim, from string) {
	metrics.Completed.WithLabelValues(claim.Labels[karpv1.NodePoolLabelKey], "failure").Inc()
	a.Log.Info("rotation attempt failed", "reason", "startupSweep", "nodeclaim", claim.Name, "from", from)
	a.event(claim, corev1.EventTypeWarning, "RotationFailed", fmt.Sprintf("startup sweep: the claim was %s with no anchor owning it; marked failed", from))
}
