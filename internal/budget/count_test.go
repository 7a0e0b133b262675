package budget

import (
	"slices"
	"testing"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

type claimCase struct {
	name                      string
	uninitialized, terminated bool // Karpenter does not count it
	deleting                  bool // the claim's deletionTimestamp
	rebooting                 bool // Karpenter's in-place reboot: Initialized reset, Rebooting True
	labelOnly                 bool // initialized by the node's label alone
	node                      *corev1.Node
}

func node(name string, ready bool, deleting bool, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
	if deleting {
		n.DeletionTimestamp = &metav1.Time{}
	}
	return n
}

func claims(cs ...claimCase) ([]karpv1.NodeClaim, map[string]*corev1.Node) {
	var out []karpv1.NodeClaim
	nodes := map[string]*corev1.Node{}
	for _, c := range cs {
		nc := karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: c.name}}
		if c.rebooting {
			nc.Status.Conditions = append(nc.Status.Conditions, status.Condition{Type: karpv1.ConditionTypeRebooting, Status: metav1.ConditionTrue})
		}
		if c.labelOnly && c.node != nil {
			c.node.Labels = map[string]string{karpv1.NodeInitializedLabelKey: "true"}
		}
		if !c.uninitialized && !c.rebooting && !c.labelOnly {
			nc.Status.Conditions = append(nc.Status.Conditions, status.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue})
		}
		if c.terminated {
			nc.Status.Conditions = append(nc.Status.Conditions, status.Condition{Type: karpv1.ConditionTypeInstanceTerminating, Status: metav1.ConditionTrue})
		}
		if c.deleting {
			nc.DeletionTimestamp = &metav1.Time{}
		}
		if c.node != nil {
			nc.Status.NodeName = c.node.Name
			nodes[c.node.Name] = c.node
		}
		out = append(out, nc)
	}
	return out, nodes
}

// The count Karpenter subtracts from the allowance (NodePoolStatsFromNodes,
// v1.15) — a counted claim deleting, its node deleting, tainted
// karpenter.sh/disrupted or not Ready — with the rotations in flight
// added, each claim once.
func TestCount(t *testing.T) {
	cl, nodes := claims(
		claimCase{name: "quiet", node: node("n-quiet", true, false)},
		claimCase{name: "consolidating", node: node("n-consolidating", true, false, karpv1.DisruptedNoScheduleTaint)},
		claimCase{name: "deleting", deleting: true, node: node("n-deleting", true, false)},
		claimCase{name: "node-deleting", node: node("n-node-deleting", true, true)},
		claimCase{name: "not-ready", node: node("n-not-ready", false, false)},
		claimCase{name: "booting", uninitialized: true, node: node("n-booting", false, false)},
		claimCase{name: "terminated", terminated: true, deleting: true},
		claimCase{name: "ours", node: node("n-ours", true, false)},
		claimCase{name: "ours-deleting", deleting: true, node: node("n-ours-deleting", true, false)},
		claimCase{name: "no-node"},
		claimCase{name: "rebooting", rebooting: true, node: node("n-rebooting", true, false)},
		claimCase{name: "label-initialized", labelOnly: true, node: node("n-label", true, false)},
		claimCase{name: "tainted-otherwise", node: node("n-tainted", true, false, corev1.Taint{Key: "example.com/other", Effect: corev1.TaintEffectNoSchedule})},
	)
	before := len(cl[0].Status.Conditions)
	got := CountOf(cl, nodes, []string{"ours", "ours-deleting", "ours-booting-gone", ""})
	if len(cl[0].Status.Conditions) != before {
		t.Fatalf("counting changed a claim's conditions: %+v", cl[0].Status.Conditions)
	}
	// booting, terminated and no-node (no initialized Node) are not
	// Karpenter's nodes; the rest are, the rebooting one too
	if got.Nodes != 10 {
		t.Errorf("nodes %d, want 10 (every claim but the uninitialized, the instance terminating and the one without a Node)", got.Nodes)
	}
	want := []string{"consolidating", "deleting", "node-deleting", "not-ready", "ours", "ours-booting-gone", "ours-deleting", "rebooting"}
	if !slices.Equal(got.Disrupted, want) {
		t.Errorf("disrupted %v\nwant %v", got.Disrupted, want)
	}
}
