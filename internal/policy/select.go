package policy

import (
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// Governance is the outcome of policy selection for one NodePool.
type Governance struct {
	// Policy is the single most specific matching policy; nil when no policy
	// matches or the best match is a tie.
	Policy *v1alpha1.RotationPolicy
	// Conflict lists, sorted, the policies tied at the highest specificity;
	// the pool is not rotated while it is non-empty.
	Conflict []string
	// Specificity of the winning (or tied) selector.
	Specificity int
	// Settings are the winning policy's, resolved; Err is why it does not
	// resolve (Invalid: it governs only because no valid policy matches).
	Settings Settings
	Err      error
}

// Governed reports whether exactly one policy governs the pool.
func (g Governance) Governed() bool { return g.Policy != nil }

// Specificity is the number of matchLabels plus matchExpressions entries; an
// empty (catch-all) selector scores 0.
func Specificity(sel metav1.LabelSelector) int {
	return len(sel.MatchLabels) + len(sel.MatchExpressions)
}

// Matches reports whether the policy's selector selects a NodePool with
// poolLabels. A selector that does not parse selects nothing.
func Matches(p *v1alpha1.RotationPolicy, poolLabels map[string]string) (bool, error) {
	sel, err := metav1.LabelSelectorAsSelector(&p.Spec.NodePoolSelector)
	if err != nil {
		return false, fmt.Errorf("spec.nodePoolSelector: %w", err)
	}
	return sel.Matches(labels.Set(poolLabels)), nil
}

// Select returns the governing policy of a NodePool with poolLabels: the
// most specific matching valid policy wins; an equal-specificity tie is a
// conflict; no match means the pool is not governed. A policy that does
// not resolve is out of the contest (docs/design.md#governance): it
// governs a pool only when no valid policy matches it, and then holds it
// as Invalid. Policies being deleted are ignored.
func Select(policies []v1alpha1.RotationPolicy, poolLabels map[string]string) Governance {
	var fallback *Governance
	for _, group := range matching(policies, poolLabels) {
		var valid, invalid []contender
		for _, p := range group.policies {
			c := contender{policy: p}
			if c.settings, c.err = Resolve(p.Spec); c.err != nil {
				invalid = append(invalid, c)
			} else {
				valid = append(valid, c)
			}
		}
		if len(valid) > 0 {
			return decide(valid, group.specificity)
		}
		if fallback == nil {
			g := decide(invalid, group.specificity)
			fallback = &g
		}
	}
	if fallback != nil {
		return *fallback
	}
	return Governance{}
}

// contender is a matching policy and the outcome of its resolution.
type contender struct {
	policy   *v1alpha1.RotationPolicy
	settings Settings
	err      error
}

// specificityGroup is the matching policies of one specificity.
type specificityGroup struct {
	specificity int
	policies    []*v1alpha1.RotationPolicy
}

// matching groups the policies selecting the pool by specificity, most
// specific first; a policy being deleted or whose selector does not parse
// selects nothing.
func matching(policies []v1alpha1.RotationPolicy, poolLabels map[string]string) []specificityGroup {
	by := map[int][]*v1alpha1.RotationPolicy{}
	for i := range policies {
		p := &policies[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if ok, err := Matches(p, poolLabels); err != nil || !ok {
			continue
		}
		s := Specificity(p.Spec.NodePoolSelector)
		by[s] = append(by[s], p)
	}
	out := make([]specificityGroup, 0, len(by))
	for s, ps := range by {
		out = append(out, specificityGroup{specificity: s, policies: ps})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].specificity > out[j].specificity })
	return out
}

// decide is the outcome of one specificity's contenders: the one, or a
// conflict between them.
func decide(cs []contender, specificity int) Governance {
	if len(cs) == 1 {
		return Governance{Policy: cs[0].policy, Settings: cs[0].settings, Err: cs[0].err, Specificity: specificity}
	}
	g := Governance{Specificity: specificity}
	for _, c := range cs {
		g.Conflict = append(g.Conflict, c.policy.Name)
	}
	sort.Strings(g.Conflict)
	return g
}
