package policy

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

func pol(name string, labels map[string]string, exprs ...metav1.LabelSelectorRequirement) v1alpha1.RotationPolicy {
	return v1alpha1.RotationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.RotationPolicySpec{NodePoolSelector: metav1.LabelSelector{MatchLabels: labels, MatchExpressions: exprs}},
	}
}

func TestSelect(t *testing.T) {
	catchAll := pol("catch-all", nil)
	api := pol("api", map[string]string{"workload": "api"})
	apiTeam := pol("api-team", map[string]string{"workload": "api", "team": "a"})
	apiTie := pol("api-tie", nil, metav1.LabelSelectorRequirement{Key: "workload", Operator: metav1.LabelSelectorOpIn, Values: []string{"api", "web"}})
	badSel := pol("bad-selector", nil, metav1.LabelSelectorRequirement{Key: "workload", Operator: "Near"})
	deleting := pol("deleting", map[string]string{"workload": "api", "team": "a", "tier": "1"})
	now := metav1.Now()
	deleting.DeletionTimestamp = &now

	cases := []struct {
		name     string
		policies []v1alpha1.RotationPolicy
		labels   map[string]string
		winner   string
		conflict []string
		spec     int
	}{
		{"no policy", nil, map[string]string{"workload": "api"}, "", nil, 0},
		{"no match", []v1alpha1.RotationPolicy{api}, map[string]string{"workload": "batch"}, "", nil, 0},
		{"catch-all governs an unlabelled pool", []v1alpha1.RotationPolicy{catchAll}, nil, "catch-all", nil, 0},
		{"keyed beats catch-all", []v1alpha1.RotationPolicy{catchAll, api}, map[string]string{"workload": "api"}, "api", nil, 1},
		{"more keys win", []v1alpha1.RotationPolicy{api, apiTeam, catchAll}, map[string]string{"workload": "api", "team": "a"}, "api-team", nil, 2},
		{"expression counts like a label", []v1alpha1.RotationPolicy{api, apiTie}, map[string]string{"workload": "api"}, "", []string{"api", "api-tie"}, 1},
		{"tie only at the top matters", []v1alpha1.RotationPolicy{api, apiTie, apiTeam}, map[string]string{"workload": "api", "team": "a"}, "api-team", nil, 2},
		{"two catch-alls tie", []v1alpha1.RotationPolicy{catchAll, pol("other-catch-all", nil)}, nil, "", []string{"catch-all", "other-catch-all"}, 0},
		{"an unparsable selector selects nothing", []v1alpha1.RotationPolicy{badSel, catchAll}, map[string]string{"workload": "api"}, "catch-all", nil, 0},
		{"a deleting policy is ignored", []v1alpha1.RotationPolicy{deleting, api}, map[string]string{"workload": "api", "team": "a", "tier": "1"}, "api", nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := Select(c.policies, c.labels)
			got := ""
			if g.Policy != nil {
				got = g.Policy.Name
			}
			if got != c.winner || !reflect.DeepEqual(g.Conflict, c.conflict) || g.Specificity != c.spec {
				t.Errorf("Select = winner %q conflict %v specificity %d; want %q %v %d", got, g.Conflict, g.Specificity, c.winner, c.conflict, c.spec)
			}
			if g.Governed() != (c.winner != "") {
				t.Errorf("Governed() = %v", g.Governed())
			}
		})
	}
}

// A policy that does not resolve is out of the specificity contest: a
// valid policy that matches governs, whether the invalid one is more, as
// or less specific; the invalid one holds the pool (as Invalid) only when
// no valid policy matches it, and two of those still tie.
func TestInvalidPolicyIsOutOfTheContest(t *testing.T) {
	invalid := func(p v1alpha1.RotationPolicy) v1alpha1.RotationPolicy {
		p.Spec.AgeThreshold = "soon"
		return p
	}
	pool := map[string]string{"workload": "api", "team": "a"}
	valid := pol("valid", map[string]string{"workload": "api"})
	cases := []struct {
		name     string
		policies []v1alpha1.RotationPolicy
		winner   string
		invalid  bool
		conflict []string
		spec     int
	}{
		{"more specific", []v1alpha1.RotationPolicy{valid, invalid(pol("bad", pool))}, "valid", false, nil, 1},
		{"as specific", []v1alpha1.RotationPolicy{invalid(pol("bad", map[string]string{"team": "a"})), valid}, "valid", false, nil, 1},
		{"less specific", []v1alpha1.RotationPolicy{invalid(pol("bad", nil)), valid}, "valid", false, nil, 1},
		{"alone", []v1alpha1.RotationPolicy{invalid(pol("bad", nil))}, "bad", true, nil, 0},
		{"the most specific of the invalid", []v1alpha1.RotationPolicy{invalid(pol("bad", nil)), invalid(pol("worse", pool))}, "worse", true, nil, 2},
		{"two invalid tie", []v1alpha1.RotationPolicy{invalid(pol("bad", nil)), invalid(pol("worse", nil))}, "", false, []string{"bad", "worse"}, 0},
		{"two valid tie beside a more specific invalid", []v1alpha1.RotationPolicy{valid, pol("other", map[string]string{"team": "a"}), invalid(pol("bad", pool))}, "", false, []string{"other", "valid"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := Select(c.policies, pool)
			got := ""
			if g.Policy != nil {
				got = g.Policy.Name
			}
			if got != c.winner || (g.Err != nil) != c.invalid || !reflect.DeepEqual(g.Conflict, c.conflict) || g.Specificity != c.spec {
				t.Errorf("Select = winner %q err %v conflict %v specificity %d; want %q invalid=%v %v %d", got, g.Err, g.Conflict, g.Specificity, c.winner, c.invalid, c.conflict, c.spec)
			}
			if c.winner == "valid" && g.Settings.CooldownAfter == 0 {
				t.Error("the winner's settings are not carried")
			}
		})
	}
}
