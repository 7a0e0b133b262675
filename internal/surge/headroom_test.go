package surge

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

func limitedPool(limits, used corev1.ResourceList) *karpv1.NodePool {
	p := poolWith()
	p.Spec.Limits = karpv1.Limits(limits)
	p.Status.Resources = used
	return p
}

func TestHeadroomTable(t *testing.T) {
	gpu := corev1.ResourceName("nvidia.com/gpu")
	cases := []struct {
		name      string
		pool      *karpv1.NodePool
		requests  corev1.ResourceList
		ok        bool
		resource  corev1.ResourceName
		want      string
		remaining string
		limit     string
	}{
		{"no limits", limitedPool(nil, res("100", "")), res("1000", "1Ti"), true, "", "", "", ""},
		{"nothing used yet: the whole limit remains", limitedPool(res("4", ""), nil), res("4", ""), true, "", "", "", ""},
		{"nothing used yet, one over", limitedPool(res("4", ""), nil), res("4001m", ""), false, corev1.ResourceCPU, "4001m", "4", "4"},
		{"exactly the remainder fits", limitedPool(res("16", "64Gi"), res("12", "60Gi")), res("4", "4Gi"), true, "", "", "", ""},
		{"memory short", limitedPool(res("16", "64Gi"), res("12", "60Gi")), res("4", "5Gi"), false, corev1.ResourceMemory, "5Gi", "4Gi", "64Gi"},
		{"both short: cpu is reported first", limitedPool(res("16", "64Gi"), res("12", "60Gi")), res("5", "5Gi"), false, corev1.ResourceCPU, "5", "4", "16"},
		{"over-used pool: remaining is negative", limitedPool(res("16", ""), res("20", "")), res("100m", ""), false, corev1.ResourceCPU, "100m", "-4", "16"},
		{"a zero request never needs room", limitedPool(res("16", ""), res("20", "")), res("0", "1Gi"), true, "", "", "", ""},
		{"a limited resource not requested", limitedPool(corev1.ResourceList{gpu: resource.MustParse("0")}, nil), res("1", "1Gi"), true, "", "", "", ""},
		{"an extended resource with no room", limitedPool(corev1.ResourceList{gpu: resource.MustParse("2")}, corev1.ResourceList{gpu: resource.MustParse("2")}),
			corev1.ResourceList{gpu: resource.MustParse("1")}, false, gpu, "1", "0", "2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			short, ok := Headroom(c.pool, c.requests)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v (shortfall %+v)", ok, c.ok, short)
			}
			if ok {
				if short.Resource != "" {
					t.Errorf("a fitting request reports %+v", short)
				}
				return
			}
			if short.Resource != c.resource || short.Want.Cmp(resource.MustParse(c.want)) != 0 ||
				short.Remaining.Cmp(resource.MustParse(c.remaining)) != 0 || short.Limit.Cmp(resource.MustParse(c.limit)) != 0 {
				t.Errorf("shortfall = %s want %s remaining %s limit %s; want %s %s %s %s", short.Resource, short.Want.String(),
					short.Remaining.String(), short.Limit.String(), c.resource, c.want, c.remaining, c.limit)
			}
		})
	}
}

func TestHeadroomLeavesThePoolAlone(t *testing.T) {
	p := limitedPool(res("16", ""), res("12", ""))
	Headroom(p, res("8", ""))
	if got := p.Spec.Limits[corev1.ResourceCPU]; got.Cmp(resource.MustParse("16")) != 0 {
		t.Errorf("the pool's limit became %s", got.String())
	}
}

func TestReadyEdges(t *testing.T) {
	host := func() *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Labels: map[string]string{karpv1.NodePoolLabelKey: "general"}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
			}}}
	}
	ph := func() *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-b"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	}
	if !Ready(ph(), host(), "node-a", "general") {
		t.Fatal("the base case should be ready (Ready need not be the first condition)")
	}
	type edit = func(*corev1.Pod, *corev1.Node) (*corev1.Pod, *corev1.Node)
	cases := []struct {
		name      string
		mutate    edit
		candidate string
	}{
		{"no placeholder", func(_ *corev1.Pod, n *corev1.Node) (*corev1.Pod, *corev1.Node) { return nil, n }, "node-a"},
		{"no host", func(p *corev1.Pod, _ *corev1.Node) (*corev1.Pod, *corev1.Node) { return p, nil }, "node-a"},
		{"unbound", func(p *corev1.Pod, n *corev1.Node) (*corev1.Pod, *corev1.Node) { p.Spec.NodeName = ""; return p, n }, "node-a"},
		{"bound elsewhere", func(p *corev1.Pod, n *corev1.Node) (*corev1.Pod, *corev1.Node) {
			p.Spec.NodeName = "node-c"
			return p, n
		}, "node-a"},
		{"succeeded", func(p *corev1.Pod, n *corev1.Node) (*corev1.Pod, *corev1.Node) {
			p.Status.Phase = corev1.PodSucceeded
			return p, n
		}, "node-a"},
		{"host without pool", func(p *corev1.Pod, n *corev1.Node) (*corev1.Pod, *corev1.Node) { n.Labels = nil; return p, n }, "node-a"},
		{"host without Ready", func(p *corev1.Pod, n *corev1.Node) (*corev1.Pod, *corev1.Node) {
			n.Status.Conditions = n.Status.Conditions[:1]
			return p, n
		}, "node-a"},
		{"host Ready unknown", func(p *corev1.Pod, n *corev1.Node) (*corev1.Pod, *corev1.Node) {
			n.Status.Conditions[1].Status = corev1.ConditionUnknown
			return p, n
		}, "node-a"},
		{"the host is the candidate", func(p *corev1.Pod, n *corev1.Node) (*corev1.Pod, *corev1.Node) { return p, n }, "node-b"},
	}
	for _, c := range cases {
		p, n := c.mutate(ph(), host())
		if Ready(p, n, c.candidate, "general") {
			t.Errorf("%s: should not be ready", c.name)
		}
	}
}

func TestNodeReady(t *testing.T) {
	cases := []struct {
		name  string
		conds []corev1.NodeCondition
		want  bool
	}{
		{"no conditions", nil, false},
		{"true", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}, true},
		{"false", []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}, false},
		{"other conditions only", []corev1.NodeCondition{{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue}}, false},
		{"the first Ready condition decides", []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionFalse}, {Type: corev1.NodeReady, Status: corev1.ConditionTrue}}, false},
	}
	for _, c := range cases {
		if got := NodeReady(&corev1.Node{Status: corev1.NodeStatus{Conditions: c.conds}}); got != c.want {
			t.Errorf("%s: NodeReady = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPathAndCreatedSinceAtSecondPrecision(t *testing.T) {
	started := time.Date(2026, 11, 30, 12, 0, 0, 700_000_000, time.UTC) // 12:00:00.7
	claimAt := func(t time.Time) *karpv1.NodeClaim {
		return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t)}}
	}
	cases := []struct {
		name    string
		created time.Time
		since   bool
		path    string
	}{
		{"the same second, stored truncated", time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), true, "provisioned"},
		{"the second before", time.Date(2026, 11, 30, 11, 59, 59, 0, time.UTC), false, "absorbed"},
		{"a second later", time.Date(2026, 11, 30, 12, 0, 1, 0, time.UTC), true, "provisioned"},
		{"last week", started.Add(-7 * 24 * time.Hour), false, "absorbed"},
	}
	for _, c := range cases {
		claim := claimAt(c.created)
		if got := CreatedSince(claim, started); got != c.since {
			t.Errorf("%s: CreatedSince = %v, want %v", c.name, got, c.since)
		}
		if got := Path(claim, started); got != c.path {
			t.Errorf("%s: Path = %q, want %q", c.name, got, c.path)
		}
	}
	if got := Path(claimAt(started), time.Time{}); got != "" {
		t.Errorf("Path without a start = %q, want empty", got)
	}
}

// Room is judged beside the placeholders still waiting for their surge
// node: those nodes are not in status.resources yet.
func TestHeadroomBesideWaitingPlaceholders(t *testing.T) {
	mk := func(name, node string, requests corev1.ResourceList, terminating bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node,
			Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: requests}}}}}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		}
		return p
	}
	phs := []*corev1.Pod{
		mk("nrc-surge-a", "", res("2", "4Gi"), false),    // waiting: counted
		mk("nrc-surge-b", "", res("3", "1Gi"), false),    // waiting: counted
		mk("nrc-surge-c", "node-c", res("8", ""), false), // bound: its node is in status.resources
		mk("nrc-surge-d", "", res("8", ""), true),        // terminating: going
		mk("nrc-surge-self", "", res("100", ""), false),  // the one being judged
	}
	w := Waiting(phs, "nrc-surge-self")
	if cpu, mem := w[corev1.ResourceCPU], w[corev1.ResourceMemory]; cpu.String() != "5" || mem.String() != "5Gi" {
		t.Fatalf("waiting = %v", w)
	}
	pool := limitedPool(res("16", ""), res("8", ""))
	if _, ok := HeadroomBeside(pool, res("3", ""), w); !ok {
		t.Error("3 beside 5 waiting in 8 left: want room")
	}
	short, ok := HeadroomBeside(pool, res("4", ""), w)
	if ok || short.Resource != corev1.ResourceCPU || short.Remaining.String() != "3" {
		t.Errorf("4 beside 5 waiting in 8 left: %+v %v, want cpu short with 3 remaining", short, ok)
	}
	if _, ok := Headroom(pool, res("4", "")); !ok {
		t.Error("alone, 4 fits in 8 left")
	}
}
