package announce

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	a "github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/budget"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// handlers is the one handler of every announcement.
var handlers = map[a.Announcement]func(*Announcer, step){
	a.RotationStarted:      (*Announcer).rotationStarted,
	a.ForcefulFallback:     (*Announcer).rotationStarted,
	a.NoCandidate:          (*Announcer).noCandidate,
	a.InsufficientHeadroom: (*Announcer).insufficientHeadroom,
	a.StaticNodePool:       (*Announcer).staticNodePool,
	a.PolicyConflict:       (*Announcer).policyConflict,
	a.PolicyInvalid:        (*Announcer).policyInvalid,
	a.Infeasible:           (*Announcer).infeasible,
	a.PlaceholderCreated:   (*Announcer).placeholderCreated,
	a.SurgeWaiting:         (*Announcer).surgeWaiting,
	a.SurgeReady:           (*Announcer).surgeReady,
	a.DrainStarted:         (*Announcer).drainStarted,
	a.RotationFailed:       (*Announcer).rotationFailed,
	a.RotationExpired:      (*Announcer).rotationExpired,
	a.RotationCompleted:    (*Announcer).rotationCompleted,
	a.GovernanceLost:       (*Announcer).governanceLost,
	a.WindowMissed:         (*Announcer).windowMissed,
	a.DrainStuck:           (*Announcer).drainStuck,
	a.AnchorRestored:       (*Announcer).anchorRestored,
	a.StrandedRepaired:     (*Announcer).strandedRepaired,
	a.OrphanedAnchor:       (*Announcer).orphanedAnchor,
	a.DrainBlocked:         (*Announcer).drainBlocked,
	a.SurgeUnservable:      (*Announcer).surgeUnservable,
	a.WindowEnding:         (*Announcer).windowEnding,
	a.ClusterCap:           (*Announcer).clusterCap,
	a.DisruptionBudget:     (*Announcer).disruptionBudget,
	a.RotationRequested:    (*Announcer).rotationRequested,
	a.SkipHeld:             (*Announcer).skipHeld,
	a.ExpiredUnrotated:     (*Announcer).expiredUnrotated,
	a.PrePullStarted:       (*Announcer).prePullStarted,
	a.PrePullEnded:         (*Announcer).prePullEnded,
	a.PrePullRefused:       (*Announcer).prePullRefused,
}

// rotationStarted announces RotationStarted, or ForcefulFallback when the
// candidate takes the surge-less path.
func (an *Announcer) rotationStarted(s step) {
	c := s.view.Candidate()
	if c == nil {
		return
	}
	surgeless := c.Kind == census.KindForcefulFallback
	if surgeless {
		metrics.ForcefulFallback.WithLabelValues(s.pool()).Inc()
	}
	deadline := c.Deadline.UTC().Format(time.RFC3339)
	s.log.Info("rotation candidate selected", "nodeclaim", c.Claim.Name, "age", c.Age.Round(time.Second).String(),
		"deadline", deadline, "surgeless", surgeless)
	if surgeless {
		an.event(s.view.Pool, corev1.EventTypeWarning, "ForcefulFallback", fmt.Sprintf("surge-less rotation of %s begins: its deadline %s is nearer than t_rot", c.Claim.Name, deadline))
		// A surge start of a blocked claim says DrainBlocked through its own
		// row; the surge-less start has none, so its blockers are said here.
		an.drainBlocked(s)
	} else {
		an.event(s.view.Pool, corev1.EventTypeNormal, "RotationStarted", fmt.Sprintf("rotating NodeClaim %s (deadline %s)", c.Claim.Name, deadline))
	}
}

func (an *Announcer) noCandidate(s step) {
	c := s.view.Census.Census
	reason := c.NoCandidateReason()
	if an.seen.enter(s.pool(), string(a.NoCandidate), fmt.Sprintf("%s %+v", reason, c)) {
		s.log.Info("no rotation candidate", "reason", reason, "census", c)
	}
}

func (an *Announcer) insufficientHeadroom(s step) {
	sf := s.view.Shortfall
	if sf == nil {
		return
	}
	msg := fmt.Sprintf("NodePool limits leave %s of %s for %s; the placeholder needs %s", sf.Remaining.String(), sf.Limit.String(), sf.Resource, sf.Want.String())
	if an.seen.enter(s.pool(), string(a.InsufficientHeadroom), msg) {
		s.log.Info("insufficient limits headroom; cannot surge", "candidate", s.claim(), "resource", string(sf.Resource),
			"want", sf.Want.String(), "remaining", sf.Remaining.String(), "limit", sf.Limit.String())
		an.event(s.view.Pool, corev1.EventTypeWarning, "InsufficientHeadroom", msg)
	}
}

func (an *Announcer) staticNodePool(s step) {
	an.warn(s.pool(), s.view.Pool, string(a.StaticNodePool), "spec.replicas is set: a surge can never rotate this NodePool, so no rotation starts")
}

func (an *Announcer) policyConflict(s step) {
	g := s.view.Governance
	an.warn(s.pool(), s.view.Pool, string(a.PolicyConflict), fmt.Sprintf("RotationPolicies %s tie at specificity %d; the NodePool is not rotated", strings.Join(g.Conflict, ", "), g.Specificity))
}

func (an *Announcer) policyInvalid(s step) {
	if an.seen.enter(s.pool(), string(a.PolicyInvalid), fmt.Sprint(s.view.PolicyErr)) {
		s.log.Info("governing policy is invalid; no rotation starts", "policy", s.view.Governance.Policy.Name, "error", fmt.Sprint(s.view.PolicyErr))
	}
}

func (an *Announcer) infeasible(s step) {
	var reasons []string
	for _, f := range s.view.Findings {
		if f.Severity == schedule.Fatal {
			reasons = append(reasons, f.Reason+": "+f.Message)
		}
	}
	if an.seen.enter(s.pool(), string(a.Infeasible), strings.Join(reasons, "; ")) {
		s.log.Info("fatal schedule findings block rotation starts", "findings", reasons)
	}
}

func (an *Announcer) placeholderCreated(s step) {
	o := s.view
	if o.Sizing == nil {
		return
	}
	sz := o.Sizing
	s.log.Info("surge placeholder created", "placeholder", surge.PlaceholderName(s.claim()), "requests", sz.Requests,
		"excluded", sz.Excluded, "clamped", sz.Clamped, "refused", sz.Refused, "bandExceeded", sz.BandExceed, "clampLimit", sz.Limit)
	switch {
	case len(sz.Refused) > 0:
		an.event(o.Subject, corev1.EventTypeWarning, "SurgeClampRefused", fmt.Sprintf("DaemonSet overhead exhausts the claim's allocatable for %v; the placeholder keeps its full request", sz.Refused))
	case len(sz.BandExceed) > 0:
		an.event(o.Subject, corev1.EventTypeWarning, "SurgeClampBandExceeded", fmt.Sprintf("placeholder clamped by more than %.0f%% for %v: the drained Pods may not all fit", surge.ClampBand*100, sz.BandExceed))
	case len(sz.Clamped) > 0:
		an.event(o.Subject, corev1.EventTypeNormal, "SurgeClamped", fmt.Sprintf("placeholder clamped to allocatable less DaemonSet overhead for %v", sz.Clamped))
	}
}

// surgeWaiting says SurgeUnschedulable when Karpenter is not serving the
// placeholder and has not said why: it is unschedulable, no surge
// NodeClaim has been launched since the attempt started, and the grace
// period is over. When Karpenter says why, the fail-fast rollback says it
// (surgeUnservable), under the same key, so it is said once.
func (an *Announcer) surgeWaiting(s step) {
	ph := s.view.Placeholder
	if ph == nil || s.view.InducedClaim != nil || s.view.Now.Sub(ph.CreationTimestamp.Time) < surge.UnservableGrace {
		return
	}
	for _, c := range ph.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			an.unschedulable(s, c.Reason, c.Reason, c.Message)
			return
		}
	}
}

// unschedulable says SurgeUnschedulable while the condition holds: keyed
// by the reason alone, as the scheduler's message carries node counts that
// change from pass to pass. The fail-fast passes fingerprint "karpenter",
// so Karpenter's message is said by the pass that rolls back even when the
// placeholder's condition was said before Karpenter spoke.
func (an *Announcer) unschedulable(s step, fingerprint, reason, detail string) {
	ph := s.view.Placeholder
	// keyed by the rotation too: two slots' placeholders are two conditions
	if ph == nil || !an.seen.enter(s.pool(), "SurgeUnschedulable/"+s.claim(), fingerprint) {
		return
	}
	s.log.Info("surge placeholder is not schedulable", "placeholder", ph.Name, "reason", reason, "detail", detail)
	an.event(s.view.Subject, corev1.EventTypeWarning, "SurgeUnschedulable", fmt.Sprintf("placeholder %s: %s: %s", ph.Name, reason, detail))
}

// surgeUnservable: the fail-fast rollback's cause, said by the pass whose
// failure write rolled the attempt back (docs/design.md#fail-fast) —
// SurgeUnschedulable with Karpenter's message, or SurgeLaunchFailed naming
// the surge NodeClaim and its Launched condition.
func (an *Announcer) surgeUnservable(s step) {
	u := s.view.Unservable
	if u == nil {
		return
	}
	if u.Reason == surge.ReasonUnschedulable {
		an.unschedulable(s, "karpenter", u.Reason, u.Message)
		return
	}
	s.log.Info("surge NodeClaim failed to launch", "surgeClaim", u.Object, "detail", u.Message)
	an.event(s.view.Subject, corev1.EventTypeWarning, "SurgeLaunchFailed", fmt.Sprintf("%s: %s", u.Object, u.Message))
}

func (an *Announcer) surgeReady(s step) {
	o := s.view
	s.log.Info("surge node ready", surgeFields(s)...)
	if started, err := time.Parse(time.RFC3339, o.Subject.Annotations[v1alpha1.AnnotationStartedAt]); err == nil {
		metrics.Duration.WithLabelValues(s.pool(), "surge_wait").Observe(o.Now.Sub(started).Seconds())
	}
}

// surgeFields are the surge figures of the surge-ready line; surgePath is
// omitted, never guessed, when the host's claim is unknown.
func surgeFields(s step) []any {
	o := s.view
	kv := []any{}
	started, _ := time.Parse(time.RFC3339, o.Subject.Annotations[v1alpha1.AnnotationStartedAt])
	if o.SurgeHost != nil {
		kv = append(kv, "surgeNode", o.SurgeHost.Name)
	}
	if !started.IsZero() {
		kv = append(kv, "surgeWait", o.Now.Sub(started).Round(time.Second).String())
	}
	if path := surge.Path(o.SurgeHostClaim, started); path != "" {
		kv = append(kv, "surgePath", path)
	}
	return kv
}

func (an *Announcer) drainStarted(s step) {
	node := ""
	if s.view.OldNode != nil {
		node = s.view.OldNode.Name
	}
	m := mode(s.view.Pool.Annotations[v1alpha1.AnnotationRotationMode])
	if _, ok := s.last(a.ActionAnchorWrite); ok && s.view.Candidate() != nil && s.view.Candidate().Kind == census.KindForcefulFallback {
		m = "forceful-fallback"
	}
	s.log.Info("drain started", "node", node, "mode", m)
}

func (an *Announcer) rotationFailed(s step) {
	o := s.view
	res, _ := s.last(a.ActionClaimState)
	var f a.Failure
	if res.Failure != nil {
		f = *res.Failure
	}
	retry, reason := f.RetryCount, f.Reason
	failedAt, _ := time.Parse(time.RFC3339, f.FailedAt)
	var count int
	fmt.Sscan(retry, &count)
	wait, _ := o.Settings.Calendar.RetryWait(failedAt, o.Settings.RetryBackoff, count)
	until := failedAt.Add(wait).UTC().Format(time.RFC3339)
	metrics.Completed.WithLabelValues(s.pool(), "failure").Inc()
	s.log.Info("rotation attempt failed", "reason", reason, "readyTimeout", o.Settings.ReadyTimeout.String(),
		"retryCount", retry, "backoffUntil", until)
	an.event(o.Subject, corev1.EventTypeWarning, "RotationFailed",
		fmt.Sprintf("%s; rolled back (retry %s, backoff until %s)", failureCause(reason, o), retry, until))
}

// failureCause is the RotationFailed Event's account of why.
func failureCause(reason string, o *View) string {
	switch reason {
	case surge.ReasonUnschedulable:
		return fmt.Sprintf("Unschedulable: Karpenter cannot provision the surge for the placeholder after %s", surge.UnservableGrace)
	case surge.ReasonLaunchFailed:
		obj := "the surge NodeClaim"
		if o.Unservable != nil {
			obj = o.Unservable.Object
		}
		return fmt.Sprintf("LaunchFailed: %s failed to launch", obj)
	}
	return fmt.Sprintf("Timeout: the surge was not ready within readyTimeout %s", o.Settings.ReadyTimeout)
}

func (an *Announcer) rotationExpired(s step) {
	metrics.Completed.WithLabelValues(s.pool(), "expired").Inc()
	s.log.Info("rotation complete", "outcome", "expired", "mode", mode(s.view.Pool.Annotations[v1alpha1.AnnotationRotationMode]))
}

// governanceLost says once that the pool left governance mid-rotation,
// worded for what the pass could do: roll the rotation back, hold the gate
// over a drain that cannot be rolled back, or release the gate of a claim
// that is already gone. The end of a held drain says nothing more: its
// hold said it.
func (an *Announcer) governanceLost(s step) {
	const why = "the NodePool is no longer governed by exactly one valid RotationPolicy"
	if res, ok := s.last(a.ActionAnchorClear); ok && res.Mirror == v1alpha1.StateGovernanceLost {
		s.log.Info("rotation gate released: the drain held after the NodePool left governance is over", "nodeclaim", s.claim())
		return
	}
	if _, ok := s.last(a.ActionPoolMirror); ok {
		s.log.Info("in-flight rotation cannot be rolled back: the NodePool left governance after the old NodeClaim's delete", "nodeclaim", s.claim())
		an.event(s.view.Pool, corev1.EventTypeWarning, string(a.GovernanceLost), fmt.Sprintf(
			"rotation of %s cannot be rolled back, its delete is issued: %s; no rotation starts until it is gone, and its end is not counted as a success", s.claim(), why))
		return
	}
	if s.view.Subject == nil {
		s.log.Info("in-flight rotation ended ungoverned: its NodeClaim is gone and the NodePool left governance", "nodeclaim", s.claim())
		an.event(s.view.Pool, corev1.EventTypeWarning, string(a.GovernanceLost), fmt.Sprintf(
			"rotation of %s ended without a success: the NodeClaim is gone and %s", s.claim(), why))
		return
	}
	s.log.Info("in-flight rotation rolled back: the NodePool left governance", "nodeclaim", s.claim())
	an.event(s.view.Pool, corev1.EventTypeWarning, string(a.GovernanceLost), fmt.Sprintf("rotation of %s rolled back: %s", s.claim(), why))
}

func (an *Announcer) windowMissed(s step) {
	res, _ := s.last(a.ActionWindowClear)
	c := s.view.Census.Census
	metrics.WindowMissed.WithLabelValues(s.pool()).Inc()
	s.log.Info("maintenance window closed with candidates unrotated", "windowOpenedAt", res.WindowOpenedAt,
		"eligible", c.Candidates, "inBackoffTriggered", c.InBackoff)
	an.event(s.view.Pool, corev1.EventTypeWarning, "WindowMissed",
		fmt.Sprintf("the window opened at %s closed with %d claim(s) outstanding and no rotation completed in it", res.WindowOpenedAt, c.Outstanding()))
}

// expiredUnrotated: Karpenter expired a claim no rotation of which was in
// flight (docs/design.md#coverage); said once, by the pass whose
// loss-record write added it to the pool's expired-unrotated.
func (an *Announcer) expiredUnrotated(s step) {
	res, _ := s.last(a.ActionLossRecord)
	l := res.Lost
	if l == nil {
		return
	}
	metrics.ExpiredUnrotated.WithLabelValues(s.pool()).Inc()
	deadline := l.Deadline.UTC().Format(time.RFC3339)
	s.log.Info("nodeclaim expired by Karpenter without a rotation", "nodeclaim", l.Claim, "deadline", deadline,
		"deletedAt", l.DeletedAt.UTC().Format(time.RFC3339), "why", l.Why)
	an.event(s.view.Pool, corev1.EventTypeWarning, string(a.ExpiredUnrotated), fmt.Sprintf(
		"NodeClaim %s was expired by Karpenter at its deadline %s without a rotation: %s", l.Claim, deadline, l.Why))
}

func (an *Announcer) drainStuck(s step) {
	if an.seen.enter(s.pool(), string(a.DrainStuck)+"/"+s.claim(), "") {
		s.log.Info("drain exceeds terminationGracePeriod + buffer; the rotation gate stays held", "nodeclaim", s.claim())
	}
}

// drainBlocked: the candidate was taken although Pods on its node will
// hold Karpenter's drain, because its deadline left no other choice
// (docs/design.md#drain-blockers); said once, by the pass whose anchor
// write started the rotation.
func (an *Announcer) drainBlocked(s step) {
	c := s.view.Candidate()
	if c == nil || len(c.Blockers) == 0 {
		return
	}
	pods := make([]string, len(c.Blockers))
	for i, b := range c.Blockers {
		pods[i] = b.Pod + " (" + b.Reason + ")"
	}
	s.log.Info("rotation started on a node whose drain is blocked", "nodeclaim", c.Claim.Name, "pods", pods,
		"deadline", c.Deadline.UTC().Format(time.RFC3339))
	an.event(c.Claim, corev1.EventTypeWarning, string(a.DrainBlocked), fmt.Sprintf(
		"rotating despite Pods that block Karpenter's drain until the terminationGracePeriod: %s; no other claim can go first before its deadline %s",
		strings.Join(pods, ", "), c.Deadline.UTC().Format(time.RFC3339)))
}

// windowEnding says once per occurrence why a pool with a candidate does
// not start near the close (docs/design.md#window-end).
func (an *Announcer) windowEnding(s step) {
	w := s.view.WindowEnd
	if !an.seen.enter(s.pool(), string(a.WindowEnding), w.Close.UTC().Format(time.RFC3339)) {
		return
	}
	kv := []any{"left", w.Left.Round(time.Second).String(), "forecast", w.Forecast.Round(time.Second).String(),
		"learned", w.Learned, "windowCloses", w.Close.UTC().Format(time.RFC3339)}
	if c := s.view.Settings.StartCutoff; c != nil {
		kv = append(kv, "startCutoff", c.String())
	}
	if c := s.view.Candidate(); c != nil {
		kv = append(kv, "candidate", c.Claim.Name)
	}
	s.log.Info("not starting: too little of the window is left for the rotation's forecast", kv...)
}

// clusterCap says once, while the cap holds the pool, that its candidate
// waits for other pools' rotations (docs/design.md#cluster-cap).
func (an *Announcer) clusterCap(s step) {
	if !an.seen.enter(s.pool(), string(a.ClusterCap), "") {
		return
	}
	kv := []any{"inFlight", s.view.ClusterInFlight, "maxConcurrentRotations", s.view.ClusterCap}
	if c := s.view.Candidate(); c != nil {
		kv = append(kv, "candidate", c.Claim.Name)
	}
	s.log.Info("not starting: the cluster's cap on rotations in flight is reached", kv...)
}

// disruptionBudget says once, while the same budget and the same
// disruptions hold the pool, that its candidate waits for them
// (docs/design.md#disruption-budget): a log line and a Normal Event on the
// NodePool naming the budget and when it ends.
func (an *Announcer) disruptionBudget(s step) {
	v := s.view
	why := budget.Why(v.Budget, v.Disrupted, v.MaxUnavailable)
	if !an.seen.enter(s.pool(), string(a.DisruptionBudget), why) {
		return
	}
	kv := []any{"disrupted", len(v.Disrupted), "disruptedClaims", v.Disrupted, "allowed", v.Budget.Allowed, "maxUnavailable", v.MaxUnavailable}
	if v.Budget.Budget != "" {
		kv = append(kv, "budget", v.Budget.Budget)
	}
	if !v.Budget.Until.IsZero() {
		kv = append(kv, "until", v.Budget.Until.UTC().Format(time.RFC3339))
	}
	if c := v.Candidate(); c != nil {
		kv = append(kv, "candidate", c.Claim.Name)
	}
	s.log.Info("not starting: the pool's disruption budget is used", kv...)
	an.event(v.Pool, corev1.EventTypeNormal, string(a.DisruptionBudget), "not starting a rotation: "+why)
}

// rotationRequested: the rotation that started serves an operator's
// rotate-next (docs/design.md#manual-controls); said once, by the pass
// whose anchor write started it.
func (an *Announcer) rotationRequested(s step) {
	c := s.view.Candidate()
	if c == nil || !c.Requested {
		return
	}
	s.log.Info("rotation started at an operator's request", "nodeclaim", c.Claim.Name, "annotation", v1alpha1.AnnotationRotateNext)
	an.event(c.Claim, corev1.EventTypeNormal, string(a.RotationRequested), fmt.Sprintf(
		"rotating it first, as %s asks; the request is removed when this attempt succeeds or fails", v1alpha1.AnnotationRotateNext))
}

// skipHeld says once per set of held claims and their skip-until why a
// pool with due claims starts nothing (docs/design.md#manual-controls).
func (an *Announcer) skipHeld(s step) {
	held := s.view.Census.SkipHeld
	if len(held) == 0 {
		return
	}
	claims := make([]string, len(held))
	for i, f := range held {
		claims[i] = f.Claim.Name + " until " + f.SkipUntil.UTC().Format(time.RFC3339)
	}
	if !an.seen.enter(s.pool(), string(a.SkipHeld), strings.Join(claims, ", ")) {
		return
	}
	s.log.Info("not starting: an operator's skip-until keeps the due claims out", "claims", claims)
	an.event(s.view.Pool, corev1.EventTypeNormal, string(a.SkipHeld), fmt.Sprintf(
		"no rotation starts: %s keeps out %s", v1alpha1.AnnotationSkipUntil, strings.Join(claims, ", ")))
}

func mode(m string) string {
	if m == v1alpha1.RotationModeFallback {
		return "forceful-fallback"
	}
	return "surge"
}

// anchorRestored: the pool had lost its anchor while a rotation was live;
// the rotation is the pool's serial gate again.
func (an *Announcer) anchorRestored(s step) {
	res, _ := s.last(a.ActionAnchorWrite)
	if res.Superseded != "" && res.Anchored == "" {
		// the live rotation ended before the superseding write: the stale
		// anchor was released, and nothing is left to re-adopt
		s.log.Info("superseded anchor released: the rotation beside it is over", "superseded", res.Superseded)
		return
	}
	claim := cmp.Or(res.Anchored, s.claim())
	msg := fmt.Sprintf("NodePool lost its %s while NodeClaim %s was %s; the rotation is re-adopted and nothing new starts until it ends",
		v1alpha1.AnnotationActiveRotation, claim, res.Readopted)
	if res.Superseded != "" {
		msg = fmt.Sprintf("NodePool's %s named NodeClaim %s, which is gone, while NodeClaim %s was %s; it names %s again and nothing new starts until that rotation ends",
			v1alpha1.AnnotationActiveRotation, res.Superseded, claim, res.Readopted, claim)
	}
	s.log.Info("stranded rotation re-adopted", "nodeclaim", claim, "state", res.Readopted, "superseded", res.Superseded)
	an.event(s.view.Pool, corev1.EventTypeWarning, string(a.AnchorRestored), msg)
}

// strandedRepaired: rotation artefacts no anchor named were repaired; a
// stranded claim this pass failed counts as a failed attempt, as the
// startup sweep counts it.
func (an *Announcer) strandedRepaired(s step) {
	res, _ := s.last(a.ActionRepairStranded)
	failed := append([]string{}, res.FailedClaims...)
	s.log.Info("stranded rotation artefacts repaired", "failed", failed, "repaired", res.Repaired)
	an.event(s.view.Pool, corev1.EventTypeWarning, string(a.StrandedRepaired),
		fmt.Sprintf("rotation artefacts no %s names were repaired (NodeClaims failed: %s): %s", v1alpha1.AnnotationActiveRotation, orNone(strings.Join(failed, ", ")), res.Repaired))
	for _, c := range failed {
		metrics.Completed.WithLabelValues(s.pool(), "failure").Inc()
		s.log.Info("rotation attempt failed", "reason", "stranded", "nodeclaim", c)
	}
}

// orphanedAnchor: the anchor named a claim that left no trace of a
// rotation; it was released, not counted as an expiry.
func (an *Announcer) orphanedAnchor(s step) {
	s.log.Info("orphaned anchor released", "nodeclaim", s.claim())
	an.event(s.view.Pool, corev1.EventTypeWarning, string(a.OrphanedAnchor),
		fmt.Sprintf("%s named NodeClaim %s, which does not exist and left no trace of a rotation; released, not counted as an expiry", v1alpha1.AnnotationActiveRotation, s.claim()))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
