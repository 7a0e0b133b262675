package surge

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	_ "github.com/noderotation/node-rotation-controller/internal/golden"
)

func cpu(s string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s)}
}

func pod(name, cpuReq string, mutate ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: cpu(cpuReq)}}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, m := range mutate {
		m(&p)
	}
	return p
}

var oldNode = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", Labels: map[string]string{
	corev1.LabelHostname: "host-a", corev1.LabelTopologyZone: "zone-1", corev1.LabelArchStable: "amd64",
}}}

func TestSizeExclusions(t *testing.T) {
	pods := []corev1.Pod{
		pod("app-1", "1"),
		pod("app-2", "500m"),
		pod("ds", "200m", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
		}),
		pod("mirror", "300m", func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }),
		pod("done", "2", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("failed", "2", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		pod("pinned-selector", "1", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "host-a"} }),
		pod("pinned-affinity", "1", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-a"}}}}},
			}}}
		}),
		pod("other-host", "250m", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "host-b"} }),
	}
	s := Size(pods, oldNode, nil, false)
	if got := s.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("1750m")) != 0 {
		t.Errorf("requests cpu = %s, want 1750m", got.String())
	}
	if want := (Exclusions{DaemonSet: 1, Mirror: 1, Terminal: 2, Pinned: 2}); s.Excluded != want {
		t.Errorf("exclusions = %+v, want %+v", s.Excluded, want)
	}
	if s.Limit != nil || len(s.Clamped) > 0 {
		t.Errorf("no allocatable means no clamp: %+v", s)
	}
}

func TestSizeClamp(t *testing.T) {
	ds := pod("ds", "500m", func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
	})
	cases := []struct {
		name, work, alloc string
		whole             bool
		want              string
		clamped, refused  bool
		band              bool
	}{
		{"fits", "2", "4", false, "2", false, false, false},
		{"clamped within the band", "3.8", "4", false, "3500m", true, false, false},
		{"clamped beyond the band", "6", "4", false, "3500m", true, false, true},
		{"refused: overhead exhausts allocatable", "1", "500m", false, "1", false, true, false},
		{"whole node", "1", "4", true, "3500m", false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Size([]corev1.Pod{pod("work", c.work), ds}, oldNode, cpu(c.alloc), c.whole)
			got := s.Requests[corev1.ResourceCPU]
			if got.Cmp(resource.MustParse(c.want)) != 0 {
				t.Errorf("requests = %s, want %s", got.String(), c.want)
			}
			if (len(s.Clamped) > 0) != c.clamped || (len(s.Refused) > 0) != c.refused || (len(s.BandExceed) > 0) != c.band {
				t.Errorf("clamped %v refused %v band %v", s.Clamped, s.Refused, s.BandExceed)
			}
		})
	}
}

func pool() *karpv1.NodePool {
	return &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: "general"},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				Taints: []corev1.Taint{{Key: "dedicated", Value: "api", Effect: corev1.TaintEffectNoSchedule}, {Key: "gpu", Effect: corev1.TaintEffectNoExecute}},
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
					{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-1", "zone-2"}},
					{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"spot"}},
					{Key: "example.com/cores", Operator: corev1.NodeSelectorOpGt, Values: []string{"2"}},
				},
			}},
			Limits: karpv1.Limits{corev1.ResourceCPU: resource.MustParse("16")},
		},
		Status: karpv1.NodePoolStatus{Resources: cpu("12")},
	}
}

func TestRequirements(t *testing.T) {
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-a"}, Spec: karpv1.NodeClaimSpec{Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
		{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"spot", "on-demand"}},
		{Key: "example.com/cores", Operator: corev1.NodeSelectorOpIn, Values: []string{"2", "4", "8"}},
		{Key: "example.com/generation", Operator: corev1.NodeSelectorOpGt, Values: []string{"5"}},
	}}}
	req, pref := Requirements(
		[]string{corev1.LabelTopologyZone, corev1.LabelArchStable, "karpenter.sh/capacity-type", "example.com/absent"},
		[]string{"example.com/cores", "example.com/generation"}, oldNode, claim, pool())
	wantReq := []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-1"}},
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
		{Key: "karpenter.sh/capacity-type", Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}},
	}
	wantPref := []corev1.NodeSelectorRequirement{
		{Key: "example.com/cores", Operator: corev1.NodeSelectorOpIn, Values: []string{"4", "8"}},
		{Key: "example.com/generation", Operator: corev1.NodeSelectorOpGt, Values: []string{"5"}},
	}
	if !reflect.DeepEqual(req, wantReq) || !reflect.DeepEqual(pref, wantPref) {
		t.Errorf("required = %v\npreferred = %v", req, pref)
	}
	// Without a node, the claim's In values are used.
	req, _ = Requirements([]string{"karpenter.sh/capacity-type", corev1.LabelTopologyZone}, nil, nil, claim, pool())
	if len(req) != 1 || req[0].Values[0] != "on-demand" {
		t.Errorf("claim-only requirements = %v", req)
	}
}

func TestPlaceholderShape(t *testing.T) {
	claim := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "general-a"}}
	p := Placeholder{Namespace: "node-rotation-system", PriorityClass: "node-rotation-placeholder", Pool: pool(), Claim: claim,
		OldNode: oldNode, Requests: cpu("1500m"), Required: []string{corev1.LabelTopologyZone}, AvoidHostnames: []string{"host-a", "host-c", "host-a"}}.Build()
	if p.Name != "nrc-surge-general-a" || p.Namespace != "node-rotation-system" || p.Labels["noderotation.io/surge-for"] != "general-a" || len(p.OwnerReferences) != 0 {
		t.Errorf("meta = %+v", p.ObjectMeta)
	}
	if *p.Spec.PreemptionPolicy != corev1.PreemptNever || p.Spec.PriorityClassName != "node-rotation-placeholder" || p.Spec.NodeSelector[karpv1.NodePoolLabelKey] != "general" {
		t.Errorf("spec = %+v", p.Spec)
	}
	wantTol := []corev1.Toleration{
		{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "api", Effect: corev1.TaintEffectNoSchedule},
		{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	}
	if !reflect.DeepEqual(p.Spec.Tolerations, wantTol) {
		t.Errorf("tolerations = %v", p.Spec.Tolerations)
	}
	na := p.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "zone-1" {
		t.Errorf("zone not pinned: %v", na.RequiredDuringSchedulingIgnoredDuringExecution)
	}
	avoid := na.PreferredDuringSchedulingIgnoredDuringExecution[0].Preference.MatchExpressions[0]
	if avoid.Operator != corev1.NodeSelectorOpNotIn || !reflect.DeepEqual(avoid.Values, []string{"host-a", "host-c"}) {
		t.Errorf("anti-affinity = %v", avoid)
	}
	if got := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.String() != "1500m" {
		t.Errorf("requests = %s", got.String())
	}
}

func TestHeadroom(t *testing.T) {
	if _, ok := Headroom(pool(), cpu("4")); !ok {
		t.Error("4 of the remaining 4 CPU should fit")
	}
	short, ok := Headroom(pool(), cpu("4500m"))
	if ok || short.Resource != corev1.ResourceCPU || short.Remaining.String() != "4" || short.Limit.String() != "16" {
		t.Errorf("shortfall = %+v ok %v", short, ok)
	}
	if _, ok := Headroom(pool(), corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Ti")}); !ok {
		t.Error("an unlimited resource always fits")
	}
}

func TestReadyAndPath(t *testing.T) {
	host := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Labels: map[string]string{karpv1.NodePoolLabelKey: "general"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	ph := &corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-b"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	if !Ready(ph, host, "node-a", "general") {
		t.Error("should be ready")
	}
	for name, mutate := range map[string]func(*corev1.Pod, *corev1.Node){
		"pending":       func(p *corev1.Pod, _ *corev1.Node) { p.Status.Phase = corev1.PodPending },
		"terminating":   func(p *corev1.Pod, _ *corev1.Node) { p.DeletionTimestamp = &metav1.Time{} },
		"on the old":    func(p *corev1.Pod, n *corev1.Node) { p.Spec.NodeName, n.Name = "node-a", "node-a" },
		"other pool":    func(_ *corev1.Pod, n *corev1.Node) { n.Labels[karpv1.NodePoolLabelKey] = "batch" },
		"host notready": func(_ *corev1.Pod, n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse },
	} {
		p, n := ph.DeepCopy(), host.DeepCopy()
		mutate(p, n)
		if Ready(p, n, "node-a", "general") {
			t.Errorf("%s: should not be ready", name)
		}
	}
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	newer := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(start.Add(time.Minute))}}
	older := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(start.Add(-time.Hour))}}
	if Path(newer, start) != "provisioned" || Path(older, start) != "absorbed" || Path(nil, start) != "" {
		t.Error("surge path wrong")
	}
}
