package census

import (
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Why a Pod blocks Karpenter's drain of its node (docs/design.md#drain-blockers).
const (
	// BlockedDoNotDisrupt: the Pod carries an active
	// karpenter.sh/do-not-disrupt; Karpenter never evicts it and deletes it
	// only when the node's terminationGracePeriod is about to run out.
	BlockedDoNotDisrupt = "do-not-disrupt"
	// BlockedPDB: a PodDisruptionBudget selecting the Pod allows no
	// disruption now, so every eviction of it is refused.
	BlockedPDB = "pdb"
)

// Blocker is a Pod on a claim's node that Karpenter's drain would wait on.
type Blocker struct {
	Pod    string `json:"pod"` // namespace/name
	Reason string `json:"reason"`
}

// Blocked is an eligible claim passed over for its drain blockers.
type Blocked struct {
	Blockers []Blocker
	// UrgentFrom is when its deadline leaves no other choice and it is
	// taken despite them; zero when it never is (tGP unset).
	UrgentFrom time.Time
}

// urgentFrom is the instant a blocked claim's deadline leaves no other
// choice, the earlier of two: one more rotation ahead of it (t_rot_est +
// cooldownAfter) and its own worst case (t_rot: the surge wait, then a
// drain that runs to the terminationGracePeriod, which is what a blocked
// drain does) would end past its last usable start; or, with windows, the
// last stretch of a window that can still start it has begun — it is
// taken there, not left to a closed window. The last usable start is
// deadline − t_rot, or earlier when windows or blackouts leave no start
// allowed at that moment (docs/design.md#manual-controls). ok is false
// when the pool's terminationGracePeriod is unset: Karpenter then never
// deletes the Pod, the drain never ends, and a rotation would hold the
// pool's gate for good, so the claim is left to Karpenter's expiry.
func urgentFrom(in Input, f Figures) (time.Time, bool) {
	d := in.Derivation
	if d.TGPUnset {
		return time.Time{}, false
	}
	ahead := d.TRotEst + in.Settings.CooldownAfter
	latest := f.Deadline.Add(-d.TRot)
	t := latest.Add(-ahead)
	if !latest.After(in.Now) {
		return t, true
	}
	cal := in.Settings.Calendar
	s, ok := cal.LastStretch(in.Now, latest, in.Settings.Timing)
	if !ok {
		return t, true // no start is allowed before it: nothing to plan for
	}
	if end := s.End.Add(-ahead); end.Before(t) {
		t = end
	}
	if !cal.AlwaysOpen(in.Now) && s.Start.Before(t) {
		t = s.Start
	}
	return t, true
}

// lastStart is the last instant a rotation of the claim may start and
// still end by its deadline: deadline − t_rot, or the end of the last
// stretch of windows and blackouts before it, looked for over the claim's
// whole life (it may be past); deadline − t_rot when they leave none.
func lastStart(in Input, f Figures) time.Time {
	latest := f.Deadline.Add(-in.Derivation.TRot)
	if s, ok := in.Settings.Calendar.LastStretch(f.Claim.CreationTimestamp.Time, latest, in.Settings.Timing); ok && s.End.Before(latest) {
		return s.End
	}
	return latest
}

// blockers are the claim's drain blockers; none when the census is not
// told how to find them.
func blockers(in Input, c *karpv1.NodeClaim) []Blocker {
	if in.DrainBlockers == nil {
		return nil
	}
	return in.DrainBlockers(c)
}

// BlockedByReason counts the claims passed over by the reasons among their
// blockers (a claim blocked for both reasons counts in both).
func (r Result) BlockedByReason() map[string]int {
	out := map[string]int{}
	for _, b := range r.Blocked {
		seen := map[string]bool{}
		for _, x := range b.Blockers {
			if !seen[x.Reason] {
				seen[x.Reason] = true
				out[x.Reason]++
			}
		}
	}
	return out
}
