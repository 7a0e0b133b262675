package policy

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

func expr(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
}

func TestSpecificity(t *testing.T) {
	cases := []struct {
		sel  metav1.LabelSelector
		want int
	}{
		{metav1.LabelSelector{}, 0},
		{metav1.LabelSelector{MatchLabels: map[string]string{}}, 0},
		{metav1.LabelSelector{MatchLabels: map[string]string{"a": "1", "b": "2"}}, 2},
		{metav1.LabelSelector{MatchLabels: map[string]string{"a": "1"}, MatchExpressions: []metav1.LabelSelectorRequirement{
			expr("b", metav1.LabelSelectorOpExists), expr("c", metav1.LabelSelectorOpNotIn, "x")}}, 3},
		// The same key twice still counts twice: specificity counts entries.
		{metav1.LabelSelector{MatchLabels: map[string]string{"a": "1"}, MatchExpressions: []metav1.LabelSelectorRequirement{
			expr("a", metav1.LabelSelectorOpIn, "1")}}, 2},
	}
	for i, c := range cases {
		if got := Specificity(c.sel); got != c.want {
			t.Errorf("case %d: Specificity = %d, want %d", i, got, c.want)
		}
	}
}

func TestMatches(t *testing.T) {
	pool := map[string]string{"workload": "api", "team": "a"}
	cases := []struct {
		name string
		p    v1alpha1.RotationPolicy
		want bool
		err  string
	}{
		{"catch-all", pol("p", nil), true, ""},
		{"label match", pol("p", map[string]string{"team": "a"}), true, ""},
		{"label value differs", pol("p", map[string]string{"team": "b"}), false, ""},
		{"all labels must match", pol("p", map[string]string{"team": "a", "tier": "1"}), false, ""},
		{"Exists", pol("p", nil, expr("team", metav1.LabelSelectorOpExists)), true, ""},
		{"DoesNotExist", pol("p", nil, expr("team", metav1.LabelSelectorOpDoesNotExist)), false, ""},
		{"DoesNotExist on an absent key", pol("p", nil, expr("tier", metav1.LabelSelectorOpDoesNotExist)), true, ""},
		{"NotIn", pol("p", nil, expr("workload", metav1.LabelSelectorOpNotIn, "batch")), true, ""},
		{"NotIn hit", pol("p", nil, expr("workload", metav1.LabelSelectorOpNotIn, "api")), false, ""},
		{"unknown operator", pol("p", nil, expr("workload", "Near", "api")), false, "spec.nodePoolSelector: "},
		{"In without values", pol("p", nil, expr("workload", metav1.LabelSelectorOpIn)), false, "spec.nodePoolSelector: "},
		{"Exists with values", pol("p", nil, expr("workload", metav1.LabelSelectorOpExists, "api")), false, "spec.nodePoolSelector: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Matches(&c.p, pool)
			if got != c.want {
				t.Errorf("Matches = %v, want %v", got, c.want)
			}
			if (err == nil) != (c.err == "") || (err != nil && !strings.HasPrefix(err.Error(), c.err)) {
				t.Errorf("error = %v, want prefix %q", err, c.err)
			}
		})
	}
}

func TestSelectReturnsTheElementItself(t *testing.T) {
	policies := []v1alpha1.RotationPolicy{pol("catch-all", nil), pol("api", map[string]string{"workload": "api"})}
	g := Select(policies, map[string]string{"workload": "api"})
	if g.Policy != &policies[1] {
		t.Errorf("policy = %p, want a pointer to the slice element %p", g.Policy, &policies[1])
	}
}

func TestSelectIsOrderIndependent(t *testing.T) {
	api := pol("api", map[string]string{"workload": "api"})
	apiTie := pol("api-tie", nil, expr("workload", metav1.LabelSelectorOpIn, "api", "web"))
	apiTeam := pol("api-team", map[string]string{"workload": "api", "team": "a"})
	catchAll := pol("catch-all", nil)
	orders := [][]v1alpha1.RotationPolicy{
		{api, apiTie, apiTeam, catchAll},
		{apiTeam, catchAll, apiTie, api},
		{catchAll, apiTie, api, apiTeam},
	}
	for i, ps := range orders {
		if g := Select(ps, map[string]string{"workload": "api", "team": "a"}); g.Policy == nil || g.Policy.Name != "api-team" || g.Specificity != 2 {
			t.Errorf("order %d: %+v", i, g)
		}
		if g := Select(ps, map[string]string{"workload": "api", "team": "b"}); g.Policy != nil || !reflect.DeepEqual(g.Conflict, []string{"api", "api-tie"}) {
			t.Errorf("order %d, team b: %+v", i, g)
		}
	}
}

func TestSelectConflictsAndDeletion(t *testing.T) {
	now := metav1.Now()
	deleting := func(p v1alpha1.RotationPolicy) v1alpha1.RotationPolicy {
		p.DeletionTimestamp = &now
		return p
	}
	labels := map[string]string{"workload": "api"}
	cases := []struct {
		name     string
		policies []v1alpha1.RotationPolicy
		winner   string
		conflict []string
		spec     int
	}{
		{"three-way tie is sorted by name", []v1alpha1.RotationPolicy{
			pol("c", labels), pol("a", nil, expr("workload", metav1.LabelSelectorOpExists)), pol("b", labels)},
			"", []string{"a", "b", "c"}, 1},
		{"a deleting policy leaves a tie", []v1alpha1.RotationPolicy{
			pol("a", labels), deleting(pol("b", labels))},
			"a", nil, 1},
		{"the only match is deleting: not governed", []v1alpha1.RotationPolicy{
			deleting(pol("a", labels))},
			"", nil, 0},
		{"a deleting catch-all does not govern", []v1alpha1.RotationPolicy{
			deleting(pol("all", nil)), pol("other", map[string]string{"workload": "batch"})},
			"", nil, 0},
		{"only unparsable selectors: not governed", []v1alpha1.RotationPolicy{
			pol("bad", nil, expr("workload", "Near"))},
			"", nil, 0},
		{"an unparsable more specific selector does not win", []v1alpha1.RotationPolicy{
			pol("bad", map[string]string{"workload": "api"}, expr("workload", "Near")), pol("api", labels)},
			"api", nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := Select(c.policies, labels)
			got := ""
			if g.Policy != nil {
				got = g.Policy.Name
			}
			if got != c.winner || !reflect.DeepEqual(g.Conflict, c.conflict) || g.Specificity != c.spec || g.Governed() != (c.winner != "") {
				t.Errorf("Select = winner %q conflict %v specificity %d; want %q %v %d", got, g.Conflict, g.Specificity, c.winner, c.conflict, c.spec)
			}
		})
	}
}
