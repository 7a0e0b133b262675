package surge

import (
	"reflect"
	"testing"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helper "k8s.io/component-helpers/scheduling/corev1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

func req(key string, op corev1.NodeSelectorOperator, values ...string) karpv1.NodeSelectorRequirementWithMinValues {
	return karpv1.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

func claimWith(rs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-a"}, Spec: karpv1.NodeClaimSpec{Requirements: rs}}
}

func poolWith(rs ...karpv1.NodeSelectorRequirementWithMinValues) *karpv1.NodePool {
	p := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	p.Spec.Template.Spec.Requirements = rs
	return p
}

func nodeWith(labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: labels}}
}

func TestReplicate(t *testing.T) {
	const k = "example.com/size"
	cases := []struct {
		name  string
		node  *corev1.Node
		claim *karpv1.NodeClaim
		pool  *karpv1.NodePool
		want  *corev1.NodeSelectorRequirement // nil: skipped
	}{
		{"the node label wins over the claim", nodeWith(map[string]string{k: "8"}), claimWith(req(k, corev1.NodeSelectorOpIn, "2", "4")), poolWith(),
			&corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{"8"}}},
		{"the claim's In values, sorted and unique", nil, claimWith(req(k, corev1.NodeSelectorOpIn, "8", "2", "8")), poolWith(),
			&corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{"2", "8"}}},
		{"the claim's Lt is kept exactly, even past the pool", nil, claimWith(req(k, corev1.NodeSelectorOpLt, "16")), poolWith(req(k, corev1.NodeSelectorOpIn, "2")),
			&corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpLt, Values: []string{"16"}}},
		{"a claim's Exists is not replicated", nil, claimWith(req(k, corev1.NodeSelectorOpExists)), poolWith(), nil},
		{"a claim's NotIn is not replicated", nil, claimWith(req(k, corev1.NodeSelectorOpNotIn, "2")), poolWith(), nil},
		{"absent everywhere", nodeWith(map[string]string{"other": "x"}), claimWith(), poolWith(req(k, corev1.NodeSelectorOpIn, "2")), nil},
		{"pool In filters", nil, claimWith(req(k, corev1.NodeSelectorOpIn, "2", "4", "8")), poolWith(req(k, corev1.NodeSelectorOpIn, "4", "8", "16")),
			&corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{"4", "8"}}},
		{"pool NotIn filters", nil, claimWith(req(k, corev1.NodeSelectorOpIn, "2", "4")), poolWith(req(k, corev1.NodeSelectorOpNotIn, "2")),
			&corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{"4"}}},
		{"pool Gt compares numbers, not strings", nil, claimWith(req(k, corev1.NodeSelectorOpIn, "3", "10", "100")), poolWith(req(k, corev1.NodeSelectorOpGt, "9")),
			&corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{"10", "100"}}},
		{"pool Lt", nil, claimWith(req(k, corev1.NodeSelectorOpIn, "3", "10")), poolWith(req(k, corev1.NodeSelectorOpLt, "10")),
			&corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{"3"}}},
		{"pool Gt against a non-number", nil, claimWith(req(k, corev1.NodeSelectorOpIn, "large")), poolWith(req(k, corev1.NodeSelectorOpGt, "1")), nil},
		{"pool Gt with two bounds admits nothing", nil, claimWith(req(k, corev1.NodeSelectorOpIn, "5")), poolWith(req(k, corev1.NodeSelectorOpGt, "1", "2")), nil},
		{"pool Exists admits every value", nodeWith(map[string]string{k: "8"}), claimWith(), poolWith(req(k, corev1.NodeSelectorOpExists)),
			&corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{"8"}}},
		{"two pool requirements intersect", nil, claimWith(req(k, corev1.NodeSelectorOpIn, "2", "4", "8")),
			poolWith(req(k, corev1.NodeSelectorOpGt, "2"), req(k, corev1.NodeSelectorOpNotIn, "8")),
			&corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{"4"}}},
		{"the node value outside the pool skips the key", nodeWith(map[string]string{k: "32"}), claimWith(req(k, corev1.NodeSelectorOpIn, "2")),
			poolWith(req(k, corev1.NodeSelectorOpIn, "2")), nil},
		{"another key's pool requirement does not filter", nil, claimWith(req(k, corev1.NodeSelectorOpIn, "2")), poolWith(req("other", corev1.NodeSelectorOpIn, "x")),
			&corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{"2"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := replicate(k, c.node, c.claim, c.pool)
			if c.want == nil {
				if ok {
					t.Errorf("replicated %+v, want the key skipped", got)
				}
				return
			}
			if !ok || !reflect.DeepEqual(got, *c.want) {
				t.Errorf("replicate = %+v %v, want %+v", got, ok, *c.want)
			}
		})
	}
}

func TestRequirementsKeepsTheKeyOrder(t *testing.T) {
	node := nodeWith(map[string]string{"z": "1", "a": "2", "m": "3"})
	req, pref := Requirements([]string{"z", "a"}, []string{"m", "absent"}, node, claimWith(), poolWith())
	if len(req) != 2 || req[0].Key != "z" || req[1].Key != "a" || len(pref) != 1 || pref[0].Key != "m" {
		t.Errorf("required %v preferred %v", req, pref)
	}
	if req, pref := Requirements(nil, nil, node, claimWith(), poolWith()); req != nil || pref != nil {
		t.Errorf("no keys: %v %v", req, pref)
	}
}

func TestTolerations(t *testing.T) {
	p := poolWith()
	if got := Tolerations(p); got != nil {
		t.Errorf("no taints: %v", got)
	}
	p.Spec.Template.Spec.Taints = []corev1.Taint{
		{Key: "a", Value: "1", Effect: corev1.TaintEffectNoSchedule},
		{Key: "b", Effect: corev1.TaintEffectPreferNoSchedule},
	}
	p.Spec.Template.Spec.StartupTaints = []corev1.Taint{{Key: "startup", Effect: corev1.TaintEffectNoSchedule}}
	want := []corev1.Toleration{
		{Key: "a", Operator: corev1.TolerationOpEqual, Value: "1", Effect: corev1.TaintEffectNoSchedule},
		{Key: "b", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectPreferNoSchedule},
	}
	if got := Tolerations(p); !reflect.DeepEqual(got, want) {
		t.Errorf("tolerations = %v, want %v (startup taints are Karpenter's to remove)", got, want)
	}
}

func TestPlaceholderDefaultsAndAffinity(t *testing.T) {
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	bare := Placeholder{Namespace: "ns", PriorityClass: "pc", Pool: poolWith(), Claim: claim}.Build()
	if bare.Spec.Containers[0].Image != DefaultImage || DefaultImage != "registry.k8s.io/pause:3.10" {
		t.Errorf("image = %s", bare.Spec.Containers[0].Image)
	}
	na := bare.Spec.Affinity.NodeAffinity
	if na == nil || na.RequiredDuringSchedulingIgnoredDuringExecution != nil || na.PreferredDuringSchedulingIgnoredDuringExecution != nil {
		t.Errorf("affinity without keys or hosts = %+v", na)
	}
	if bare.Name != "nrc-surge-c1" || PlaceholderName("c1") != bare.Name {
		t.Errorf("name = %s", bare.Name)
	}
	wantLabels := map[string]string{
		"noderotation.io/surge-for": "c1", "noderotation.io/nodepool": "general",
		"app.kubernetes.io/managed-by": "node-rotation-controller", "app.kubernetes.io/component": "surge-placeholder",
	}
	if !reflect.DeepEqual(bare.Labels, wantLabels) {
		t.Errorf("labels = %v", bare.Labels)
	}

	p := Placeholder{Namespace: "ns", PriorityClass: "pc", Image: "example.com/hold:1", Pool: poolWith(), Claim: claim,
		OldNode: nodeWith(map[string]string{"arch": "arm64", "gen": "7"}), Required: []string{"arch"}, Preferred: []string{"gen"},
		AvoidHostnames: []string{"", "host-b", "host-a", "host-b"}}.Build()
	if p.Spec.Containers[0].Image != "example.com/hold:1" {
		t.Errorf("image = %s", p.Spec.Containers[0].Image)
	}
	na = p.Spec.Affinity.NodeAffinity
	wantRequired := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}}}}
	wantPreferred := []corev1.PreferredSchedulingTerm{
		{Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "gen", Operator: corev1.NodeSelectorOpIn, Values: []string{"7"}}}}},
		{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"host-a", "host-b"}}}}},
	}
	if !reflect.DeepEqual(na.RequiredDuringSchedulingIgnoredDuringExecution, wantRequired) {
		t.Errorf("required = %+v", na.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	if !reflect.DeepEqual(na.PreferredDuringSchedulingIgnoredDuringExecution, wantPreferred) {
		t.Errorf("preferred = %+v", na.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	// Only empty hostnames to avoid: no anti-affinity term.
	p = Placeholder{Pool: poolWith(), Claim: claim, AvoidHostnames: []string{"", ""}}.Build()
	if p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution != nil {
		t.Errorf("empty hostnames produced %+v", p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
	}
}

func TestPlaceholderIsLockedDown(t *testing.T) {
	p := Placeholder{Namespace: "ns", PriorityClass: "pc", Pool: poolWith(), Claim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c"}},
		Requests: cpu("2")}.Build()
	s := p.Spec
	if *s.TerminationGracePeriodSeconds != 0 || *s.AutomountServiceAccountToken || *s.EnableServiceLinks || s.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("pod spec = %+v", s)
	}
	if !*s.SecurityContext.RunAsNonRoot || *s.SecurityContext.RunAsUser != 65535 || s.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security = %+v", s.SecurityContext)
	}
	c := s.Containers[0]
	if len(s.Containers) != 1 || c.Name != "reserve" || *c.SecurityContext.AllowPrivilegeEscalation || !*c.SecurityContext.ReadOnlyRootFilesystem ||
		!reflect.DeepEqual(c.SecurityContext.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container = %+v", c)
	}
	if got := c.Resources.Requests[corev1.ResourceCPU]; got.String() != "2" || c.Resources.Limits != nil {
		t.Errorf("resources = %+v", c.Resources)
	}
	if s.NodeName != "" || len(p.OwnerReferences) != 0 || p.Namespace != "ns" {
		t.Errorf("the placeholder must be a bare, unscheduled Pod: %+v", p.ObjectMeta)
	}
}

// At one rotation at a time the placeholder has no pod affinity at all;
// with several, it repels the pool's other placeholders on the hostname and
// matches its own labels, so N placeholders need N nodes.
func TestPlaceholderSpread(t *testing.T) {
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	if one := (Placeholder{Pool: poolWith(), Claim: claim}).Build(); one.Spec.Affinity.PodAntiAffinity != nil || one.Spec.Affinity.PodAffinity != nil {
		t.Errorf("one at a time: pod affinity %+v %+v", one.Spec.Affinity.PodAntiAffinity, one.Spec.Affinity.PodAffinity)
	}
	p := Placeholder{Pool: poolWith(), Claim: claim, Spread: true}.Build()
	terms := p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 || terms[0].TopologyKey != corev1.LabelHostname {
		t.Fatalf("anti-affinity = %+v", terms)
	}
	sel, err := metav1.LabelSelectorAsSelector(terms[0].LabelSelector)
	if err != nil {
		t.Fatal(err)
	}
	if !sel.Matches(labels.Set(p.Labels)) {
		t.Errorf("the term %s does not match the placeholder's own labels %v", sel, p.Labels)
	}
	other := Placeholder{Pool: poolWith(), Claim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c2"}}, Spread: true}.Build()
	if !sel.Matches(labels.Set(other.Labels)) {
		t.Errorf("the term does not repel the pool's other placeholder %v", other.Labels)
	}
	elsewhere := poolWith()
	elsewhere.Name = "batch"
	if sel.Matches(labels.Set(Placeholder{Pool: elsewhere, Claim: claim}.Build().Labels)) {
		t.Error("the term repels another pool's placeholder")
	}
}

// With several rotations at once a placeholder never lands on another
// rotation's surge host — a node labelled surge-for — whose room is for
// that rotation's drained Pods; one at a time it carries no such term.
func TestPlaceholderAvoidsOtherSurgeHosts(t *testing.T) {
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c1"}}
	host := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "h", Labels: map[string]string{
		corev1.LabelHostname: "h", karpv1.NodePoolLabelKey: poolWith().Name, v1alpha1.LabelSurgeFor: "c0"}}}
	fresh := host.DeepCopy()
	delete(fresh.Labels, v1alpha1.LabelSurgeFor)
	admits := func(p *corev1.Pod, n *corev1.Node) bool {
		sel := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		if sel == nil {
			return true
		}
		ok, err := corev1helper.MatchNodeSelectorTerms(n, sel)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	spread := Placeholder{Pool: poolWith(), Claim: claim, Spread: true}.Build()
	if admits(spread, host) || !admits(spread, fresh) {
		t.Errorf("several at once: admits another rotation's surge host %v, a fresh node %v", admits(spread, host), admits(spread, fresh))
	}
	if one := (Placeholder{Pool: poolWith(), Claim: claim}).Build(); !admits(one, host) {
		t.Error("one at a time: the placeholder changed")
	}
}
