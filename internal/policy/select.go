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

// Select returns the governing policy of a NodePool with poolLabels: the most
// specific matching selector wins; an equal-specificity tie is a conflict;
// no match means the pool is not governed. Policies being deleted are ignored.
func Select(policies []v1alpha1.RotationPolicy, poolLabels map[string]string) Governance {
	best := -1
	var winners []*v1alpha1.RotationPolicy
	for i := range policies {
		p := &policies[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if ok, err := Matches(p, poolLabels); err != nil || !ok {
			continue
		}
		switch s := Specificity(p.Spec.NodePoolSelector); {
		case s > best:
			best, winners = s, []*v1alpha1.RotationPolicy{p}
		case s == best:
			winners = append(winners, p)
		}
	}
	g := Governance{Specificity: best}
	switch len(winners) {
	case 0:
		g.Specificity = 0
	case 1:
		g.Policy = winners[0]
	default:
		for _, w := range winners {
			g.Conflict = append(g.Conflict, w.Name)
		}
		sort.Strings(g.Conflict)
	}
	return g
}
