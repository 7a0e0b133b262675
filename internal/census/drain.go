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
	// taken despite them.
	UrgentFrom time.Time
}

// urgentFrom is the instant a claim's deadline leaves no other choice: one
// more rotation ahead of it (t_rot_est + cooldownAfter) and its own
// worst-case rotation (t_rot: the surge wait, then a drain that runs to
// the terminationGracePeriod, which is what a blocked drain does) would
// end past the deadline.
func urgentFrom(in Input, f Figures) time.Time {
	return f.Deadline.Add(-(in.Derivation.TRot + in.Derivation.TRotEst + in.Settings.CooldownAfter))
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
