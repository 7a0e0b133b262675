package v1alpha1

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// LossesKept is how long expired-unrotated remembers a claim lost to
// Karpenter's expiry: a week, the span `rotationctl status` counts over,
// and long past any drain, so a claim is never recorded twice
// (docs/design.md#coverage).
const LossesKept = 7 * 24 * time.Hour

// +kubebuilder:object:generate=false

// Loss is one claim of expired-unrotated: its name and when Karpenter
// deleted it.
type Loss struct {
	Claim     string
	DeletedAt time.Time
}

// ParseLosses reads expired-unrotated. Every well-formed entry is
// returned; the error names the first entry that is not
// <claim>@<RFC3339>, which the next record drops.
func ParseLosses(raw string) ([]Loss, error) {
	if raw == "" {
		return nil, nil
	}
	var out []Loss
	var bad error
	for _, f := range strings.Split(raw, ",") {
		name, at, ok := strings.Cut(strings.TrimSpace(f), "@")
		t, err := time.Parse(time.RFC3339, at)
		if !ok || name == "" || err != nil {
			if bad == nil {
				bad = fmt.Errorf("entry %q is not <claim>@<RFC3339 time>", f)
			}
			continue
		}
		out = append(out, Loss{Claim: name, DeletedAt: t})
	}
	return out, bad
}

// RecordLoss is expired-unrotated with l added and every entry deleted
// LossesKept or longer before now dropped (malformed entries too), oldest
// first.
func RecordLoss(raw string, l Loss, now time.Time) string {
	prev, _ := ParseLosses(raw)
	kept := make([]Loss, 0, len(prev)+1)
	for _, p := range append(prev, l) {
		if now.Sub(p.DeletedAt) < LossesKept {
			kept = append(kept, p)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].DeletedAt.Before(kept[j].DeletedAt) })
	parts := make([]string, len(kept))
	for i, p := range kept {
		parts[i] = p.Claim + "@" + p.DeletedAt.UTC().Format(time.RFC3339)
	}
	return strings.Join(parts, ",")
}

// Recorded reports whether losses name claim.
func Recorded(losses []Loss, claim string) bool {
	for _, l := range losses {
		if l.Claim == claim {
			return true
		}
	}
	return false
}

// RotationMetDeadline reports whether a claim's state annotation is that
// of a rotation in flight or one recorded expired: a claim in such a state
// that Karpenter expires is the rotation's expiry
// (completed_total{outcome="expired"}), never a loss of expired-unrotated.
func RotationMetDeadline(state string) bool {
	return state == StatePending || state == StateDraining || state == StateExpired
}
