package observe

import (
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// snapshot turns the observation into the engine's input: raw annotation
// values, resolved durations, and the Go-computed surge and census facts.
// The candidate fact's value of a pool with none (the census names the
// others).
var candidateNone = engine.UsesFactValue("candidate", "none")

// snapshot is one slot's: its own anchor, mirror, mode and last success
// (the cooldown is per slot), the pool's freeze, failure pause and window
// stamp (docs/design.md#throughput).
func snapshot(obs *Observation) engine.Snapshot {
	a, k := obs.Pool.Annotations, obs.Slot.Key
	s := engine.Snapshot{
		Now: obs.Now,
		Pool: engine.PoolObservation{
			Governance: obs.GovernanceState(), Static: obs.Pool.Spec.Replicas != nil,
			Feasible: !schedule.HasFatal(obs.Findings), WindowOpen: obs.WindowOpen, WindowEnding: obs.WindowEnd.Ending,
			// the cap counts the rotations in flight everywhere: the other
			// pools' and this pool's own other slots'
			ClusterCapReached: obs.ClusterInFlight >= 0 && obs.ClusterInFlight+ownOthers(obs) >= obs.ClusterCap,
			BudgetReached:     budgetReached(obs),
			Blackout:          blackoutNow(obs), BlackoutSinceStamp: blackoutSinceStamp(obs),
			Anchor: a[k(v1alpha1.AnnotationActiveRotation)], RotationState: a[k(v1alpha1.AnnotationActiveRotationState)], RotationMode: a[k(v1alpha1.AnnotationRotationMode)],
			Freeze: a[v1alpha1.AnnotationFreeze], LastRotationAt: a[k(v1alpha1.AnnotationLastRotationAt)],
			LastFailureAt: a[v1alpha1.AnnotationLastFailureAt], WindowOpenedAt: a[v1alpha1.AnnotationWindowOpenedAt],
			DrainingAt: a[k(v1alpha1.AnnotationDrainingAt)], PrePull: a[k(v1alpha1.AnnotationPrePull)],
		},
		Policy: engine.PolicyObservation{
			ReadyTimeout:  engine.Duration(obs.Settings.ReadyTimeout),
			CooldownAfter: engine.Duration(obs.Settings.CooldownAfter),
			FailurePause:  engine.Duration(obs.Derivation.FailurePause),
			DrainBound:    engine.Duration(obs.Derivation.TGP + schedule.Buffer),
			PrePull:       obs.Settings.PrePull.Enabled, PrePullTimeout: engine.Duration(obs.Settings.PrePull.InWindow()),
		},
		Candidate:   candidateNone,
		Stranded:    obs.Stranded.Kind(),
		Outstanding: obs.Census.Census.Outstanding(),
	}
	if !obs.Budget.Until.IsZero() && obs.Budget.Holds(disruptedOthers(obs)) {
		// the budget's end opens the gate only when the budget is what holds
		s.Pool.BudgetUntil = obs.Budget.Until.UTC().Format(time.RFC3339)
	}
	if c := obs.Candidate(); c != nil {
		s.Candidate, s.CandidateDrainBlocked, s.CandidateRequested = c.Kind, len(c.Blockers) > 0, c.Requested
	}
	s.SkipHeld = len(obs.Census.SkipHeld) > 0
	if anchored := s.Pool.Anchor != ""; anchored && obs.Subject != nil {
		c := obs.Subject
		s.Claim = engine.ClaimObservation{
			Exists: true, State: c.Annotations[v1alpha1.AnnotationState],
			StartedAt: c.Annotations[v1alpha1.AnnotationStartedAt], FailedAt: c.Annotations[v1alpha1.AnnotationFailedAt],
			RetryCount: c.Annotations[v1alpha1.AnnotationRetryCount], Deleting: c.DeletionTimestamp != nil,
		}
		if c.DeletionTimestamp != nil {
			s.Claim.DeletedAt = c.DeletionTimestamp.Time
		}
		if s.Claim.State == v1alpha1.StateFailed {
			s.Claim.RetryAt, s.Claim.BackoffError = backoff(obs, c)
		}
	}
	candNode := ""
	if obs.OldNode != nil {
		candNode = obs.OldNode.Name
	}
	s.Surge = engine.SurgeObservation{
		PlaceholderExists: obs.Placeholder != nil,
		PairedNodes:       obs.AnchorPaired,
		Ready:             surge.Ready(obs.Placeholder, obs.SurgeHost, candNode, obs.Pool.Name),
		Headroom:          obs.Shortfall == nil,
		PrePull:           obs.PrePull.State(),
	}
	if obs.Unservable != nil {
		s.Surge.Unservable = obs.Unservable.Reason
	}
	return s
}

// backoff is when a failed claim's backoff ends, or what is malformed in
// its failure record: as the census parsed it for a governed pool (its
// figures, or the malformed value that kept it out), parsed here only for
// a pool the census did not look at.
func backoff(obs *Observation, c *karpv1.NodeClaim) (time.Time, string) {
	if f, ok := obs.Census.Figures[c.Name]; ok && sameRecord(f.Claim, c) {
		return f.RetryAt, ""
	}
	for _, b := range obs.Census.Bad {
		if b.Object == "NodeClaim/"+c.Name && (b.Key == v1alpha1.AnnotationFailedAt || b.Key == v1alpha1.AnnotationRetryCount) && c.Annotations[b.Key] == b.Value {
			return time.Time{}, b.Error()
		}
	}
	at, bad := census.ClaimRetryAt(c, obs.Settings)
	if bad != nil {
		return time.Time{}, bad.Error()
	}
	return at, ""
}

// sameRecord: the census judged the claim on the failure record the pass
// reads (the subject may be a copy read apart from the census's list).
func sameRecord(a, b *karpv1.NodeClaim) bool {
	for _, k := range []string{v1alpha1.AnnotationState, v1alpha1.AnnotationFailedAt, v1alpha1.AnnotationRetryCount} {
		if a.Annotations[k] != b.Annotations[k] {
			return false
		}
	}
	return true
}

// nextInstant is the earliest future moment a time-based fact changes:
// the instants the table declares for the facts it computes from the
// clock (a freeze's end, a cooldown's, a backoff's), and those of the
// inputs computed here (the calendar, the blackouts, the unservable
// grace, the census's age triggers).
func nextInstant(obs *Observation, rules *engine.Engine) time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if t.After(obs.Now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	consider(rules.NextChange(&obs.Snapshot))
	for _, s := range obs.Slots {
		consider(rules.NextChange(&s.Snapshot))
		if ph := s.Placeholder; ph != nil && s.Subject != nil && waiting(s) {
			consider(ph.CreationTimestamp.Add(surge.UnservableGrace))
		}
	}
	if obs.Governed() {
		if t, ok := obs.Settings.Calendar.NextOpen(obs.Now); ok {
			consider(t)
		}
		if t, ok := obs.Settings.Calendar.NextClose(obs.Now); ok {
			consider(t)
			consider(t.Add(-obs.WindowEnd.Hold)) // the window-end gate closes
		}
	}
	for _, b := range obs.Settings.Blackouts {
		consider(b.Start)
		consider(b.End)
	}
	for _, t := range obs.Census.Instants() {
		consider(t)
	}
	return next
}

// blackoutNow: one of the policy's blackouts is in force.
func blackoutNow(obs *Observation) bool {
	_, in := obs.Settings.BlackoutAt(obs.Now)
	return in
}

// blackoutSinceStamp: a blackout overlapped the stamped occurrence, from
// window-opened-at to its close (or now, while it is open) — its
// outstanding work was declined, not missed. A blackout that begins at or
// after the close does not excuse it, however late the evaluating pass.
func blackoutSinceStamp(obs *Observation) bool {
	opened, err := time.Parse(time.RFC3339, obs.Pool.Annotations[v1alpha1.AnnotationWindowOpenedAt])
	if err != nil {
		return false
	}
	end := obs.Now
	if o, ok := obs.Settings.Calendar.OccurrenceAt(opened); ok && o.End.Before(end) {
		end = o.End
	}
	for _, b := range obs.Settings.Blackouts {
		if b.Start.Before(end) && b.End.After(opened) {
			return true
		}
	}
	return false
}

// ownOthers counts the pool's anchored slots other than the observation's
// own.
func ownOthers(obs *Observation) int {
	n := 0
	for _, a := range v1alpha1.Anchors(obs.Pool.Annotations) {
		if a.Slot != obs.Slot {
			n++
		}
	}
	return n
}
