package surge

import (
	"reflect"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func res(cpuQ, memQ string) corev1.ResourceList {
	out := corev1.ResourceList{}
	if cpuQ != "" {
		out[corev1.ResourceCPU] = resource.MustParse(cpuQ)
	}
	if memQ != "" {
		out[corev1.ResourceMemory] = resource.MustParse(memQ)
	}
	return out
}

func withRequests(name string, r corev1.ResourceList, mutate ...func(*corev1.Pod)) corev1.Pod {
	p := pod(name, "0")
	p.Spec.Containers[0].Resources.Requests = r
	for _, m := range mutate {
		m(&p)
	}
	return p
}

func daemonSet(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(true)}}
}

// sameList compares resource lists by value (Quantity formats may differ).
func sameList(t *testing.T, what string, got, want corev1.ResourceList) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
		return
	}
	for name, w := range want {
		g, ok := got[name]
		if !ok || g.Cmp(w) != 0 {
			t.Errorf("%s[%s] = %s, want %s", what, name, g.String(), w.String())
		}
	}
}

func names(ns []corev1.ResourceName) []string {
	out := []string{}
	for _, n := range ns {
		out = append(out, string(n))
	}
	sort.Strings(out)
	return out
}

func TestSizeTwoResources(t *testing.T) {
	pods := []corev1.Pod{
		withRequests("a", res("1", "2Gi")),
		withRequests("b", res("2", "1Gi")),
		withRequests("ds", res("500m", "512Mi"), daemonSet),
	}
	cases := []struct {
		name       string
		alloc      corev1.ResourceList
		whole      bool
		requests   corev1.ResourceList
		limit      corev1.ResourceList
		clamped    []string
		refused    []string
		bandExceed []string
	}{
		{"both fit", res("8", "16Gi"), false, res("3", "3Gi"), res("7500m", "15872Mi"), nil, nil, nil},
		// cpu: limit 3 − 0.5 = 2.5, short 0.5 of 3 (16.7%); memory fits.
		{"cpu clamped beyond the band", res("3", "16Gi"), false, res("2500m", "3Gi"), res("2500m", "15872Mi"), []string{"cpu"}, nil, []string{"cpu"}},
		// memory: limit 3.25Gi − 0.5Gi = 2.75Gi, short 0.25Gi of 3Gi (8.3%).
		{"memory clamped within the band", res("8", "3328Mi"), false, res("3", "2816Mi"), res("7500m", "2816Mi"), []string{"memory"}, nil, nil},
		// cpu: the DaemonSets use all of it; the request is kept whole.
		{"cpu refused", res("500m", "16Gi"), false, res("3", "3Gi"), res("0", "15872Mi"), nil, []string{"cpu"}, nil},
		// cpu: overhead above allocatable floors the limit at 0.
		{"overhead above allocatable", res("250m", "16Gi"), false, res("3", "3Gi"), res("0", "15872Mi"), nil, []string{"cpu"}, nil},
		{"a resource without allocatable is not clamped", res("8", ""), false, res("3", "3Gi"), res("7500m", ""), nil, nil, nil},
		{"whole node takes both limits", res("8", "16Gi"), true, res("7500m", "15872Mi"), res("7500m", "15872Mi"), nil, nil, nil},
		{"whole node keeps the sum where the limit is 0", res("500m", "16Gi"), true, res("3", "15872Mi"), res("0", "15872Mi"), nil, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Size(pods, oldNode, c.alloc, c.whole)
			sameList(t, "requests", s.Requests, c.requests)
			sameList(t, "sum", s.Sum, res("3", "3Gi"))
			sameList(t, "limit", s.Limit, c.limit)
			for what, pair := range map[string][2][]string{
				"clamped": {names(s.Clamped), c.clamped}, "refused": {names(s.Refused), c.refused}, "band": {names(s.BandExceed), c.bandExceed},
			} {
				want := pair[1]
				if want == nil {
					want = []string{}
				}
				if !reflect.DeepEqual(pair[0], want) {
					t.Errorf("%s = %v, want %v", what, pair[0], want)
				}
			}
		})
	}
}

func TestSizeBandBoundary(t *testing.T) {
	cases := []struct {
		work, alloc string
		exceed      bool
	}{
		{"10", "9", false},    // short exactly 10%
		{"10", "8900m", true}, // 11%
		{"10", "9100m", false},
	}
	for _, c := range cases {
		s := Size([]corev1.Pod{pod("w", c.work)}, oldNode, cpu(c.alloc), false)
		if len(s.Clamped) != 1 || (len(s.BandExceed) == 1) != c.exceed {
			t.Errorf("%s on %s: clamped %v band %v, want band exceeded %v", c.work, c.alloc, s.Clamped, s.BandExceed, c.exceed)
		}
		if got := s.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse(c.alloc)) != 0 {
			t.Errorf("%s on %s: requests %s, want the limit", c.work, c.alloc, got.String())
		}
	}
}

func TestSizeDoesNotAliasTheSum(t *testing.T) {
	s := Size([]corev1.Pod{pod("w", "6")}, oldNode, cpu("4"), false)
	if got := s.Sum[corev1.ResourceCPU]; got.Cmp(resource.MustParse("6")) != 0 {
		t.Errorf("clamping changed the recorded sum to %s", got.String())
	}
	if got := s.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("requests = %s, want the limit 4", got.String())
	}
}

func TestSizeCountsPodRequestsLikeTheScheduler(t *testing.T) {
	// An init container larger than the app containers sets the Pod's request;
	// Pod overhead adds to it.
	p := pod("init", "1", func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Resources: corev1.ResourceRequirements{Requests: cpu("3")}}}
		p.Spec.Overhead = cpu("250m")
	})
	s := Size([]corev1.Pod{p, pod("plain", "500m")}, oldNode, nil, false)
	if got := s.Requests[corev1.ResourceCPU]; got.Cmp(resource.MustParse("3750m")) != 0 {
		t.Errorf("requests = %s, want 3 + 250m + 500m", got.String())
	}
	if s := Size(nil, oldNode, cpu("4"), false); len(s.Requests) != 0 || len(s.Clamped) != 0 {
		t.Errorf("no pods: %+v", s)
	}
}

func TestSizeClassification(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*corev1.Pod)
		node   *corev1.Node
		want   Exclusions // zero: counted in the sum
	}{
		{"owned by a DaemonSet without controller flag", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds"}}
		}, oldNode, Exclusions{}},
		{"owned but not controlled by a DaemonSet", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr.To(false)}}
		}, oldNode, Exclusions{}},
		{"controlled by a ReplicaSet", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "rs", Controller: ptr.To(true)}}
		}, oldNode, Exclusions{}},
		{"a terminal DaemonSet Pod counts as DaemonSet", func(p *corev1.Pod) { daemonSet(p); p.Status.Phase = corev1.PodSucceeded }, oldNode, Exclusions{DaemonSet: 1}},
		{"a terminal mirror Pod counts as mirror", func(p *corev1.Pod) {
			p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: ""}
			p.Status.Phase = corev1.PodFailed
		}, oldNode, Exclusions{Mirror: 1}},
		{"pending counts", func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }, oldNode, Exclusions{}},
		{"pinned by hostname affinity", func(p *corev1.Pod) { p.Spec.Affinity = requiredAffinity(corev1.LabelHostname, "host-a") }, oldNode, Exclusions{Pinned: 1}},
		{"hostname affinity naming two hosts is not pinned", func(p *corev1.Pod) {
			p.Spec.Affinity = requiredAffinity(corev1.LabelHostname, "host-a", "host-b")
		}, oldNode, Exclusions{}},
		{"NotIn the hostname is not pinned", func(p *corev1.Pod) {
			p.Spec.Affinity = requiredAffinity(corev1.LabelHostname, "host-b")
			p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Operator = corev1.NodeSelectorOpNotIn
		}, oldNode, Exclusions{}},
		{"metadata.name in match expressions", func(p *corev1.Pod) { p.Spec.Affinity = requiredAffinity("metadata.name", "node-a") }, oldNode, Exclusions{Pinned: 1}},
		{"metadata.name of another node", func(p *corev1.Pod) { p.Spec.Affinity = requiredAffinity("metadata.name", "node-b") }, oldNode, Exclusions{}},
		{"only preferred affinity", func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{
				{Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"host-a"}}}}}}}}
		}, oldNode, Exclusions{}},
		{"pod anti-affinity only", func(p *corev1.Pod) { p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}} }, oldNode, Exclusions{}},
		{"no node: nothing is pinned", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "host-a"} }, nil, Exclusions{}},
		{"a node without a hostname label pins nothing by selector", func(p *corev1.Pod) {
			p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: ""}
		}, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-x"}}, Exclusions{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := pod("p", "1", c.mutate)
			s := Size([]corev1.Pod{p}, c.node, nil, false)
			if s.Excluded != c.want {
				t.Errorf("exclusions = %+v, want %+v", s.Excluded, c.want)
			}
			counted := c.want == Exclusions{}
			if got := s.Sum[corev1.ResourceCPU]; (got.Cmp(resource.MustParse("1")) == 0) != counted {
				t.Errorf("sum = %s, counted %v", got.String(), counted)
			}
		})
	}
}

func requiredAffinity(key string, values ...string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}},
	}}}
}
