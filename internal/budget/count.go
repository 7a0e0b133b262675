package budget

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Count is a pool's disruption as its budget sees it.
type Count struct {
	// Nodes is the pool's size as Karpenter counts it for a percentage:
	// its claims that are initialized (or rebooting) and whose instance is
	// not yet terminating.
	Nodes int
	// Disrupted are the pool's claims being disrupted, whoever started it,
	// each once, by name: Karpenter's count (a counted claim deleting or
	// rebooting, or its node deleting, tainted karpenter.sh/disrupted or
	// not Ready) and
	// every claim a rotation of this controller has in flight.
	Disrupted []string
}

// CountOf counts the pool's claims with their nodes (by name); ours are
// the claims the pool's rotations have in flight (the anchors), counted
// whatever Karpenter makes of them.
func CountOf(claims []karpv1.NodeClaim, nodes map[string]*corev1.Node, ours []string) Count {
	var c Count
	seen := map[string]bool{}
	for i := range claims {
		cl := &claims[i]
		n := nodes[cl.Status.NodeName]
		if !counted(cl, n) {
			continue
		}
		c.Nodes++
		if disrupting(cl, n) && !seen[cl.Name] {
			seen[cl.Name] = true
			c.Disrupted = append(c.Disrupted, cl.Name)
		}
	}
	for _, name := range ours {
		if name != "" && !seen[name] {
			seen[name] = true
			c.Disrupted = append(c.Disrupted, name)
		}
	}
	slices.Sort(c.Disrupted)
	return c
}

// counted: Karpenter counts the claim toward the pool's nodes
// (NodePoolStatsFromNodes, v1.15): initialized — its Node exists and is
// initialized (Karpenter's karpenter.sh/initialized label, set with the
// claim's Initialized condition; a claim launched but not initialized
// serves no Pods) — or rebooting in place (a reboot resets Initialized,
// and the node still counts), and its instance not yet terminating.
func counted(c *karpv1.NodeClaim, n *corev1.Node) bool {
	if conditionTrue(c, karpv1.ConditionTypeInstanceTerminating) {
		return false
	}
	initialized := n != nil && (n.Labels[karpv1.NodeInitializedLabelKey] == "true" || conditionTrue(c, karpv1.ConditionTypeInitialized))
	return initialized || conditionTrue(c, karpv1.ConditionTypeRebooting)
}

// conditionTrue reads the condition off the claim's status. Not through
// StatusConditions(), which sets every condition it finds missing to
// Unknown and recomputes Ready on the object: on a claim of the cache's
// that would change what every later reader sees.
func conditionTrue(c *karpv1.NodeClaim, typ string) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == typ {
			return cond.Status == metav1.ConditionTrue
		}
	}
	return false
}

// disrupting: Karpenter subtracts the claim from the allowance — marked
// for deletion (the claim or its node deleting, or the node tainted
// karpenter.sh/disrupted, the taint Karpenter sets on the candidates of a
// command it has begun), rebooting in place, or its node not Ready.
func disrupting(c *karpv1.NodeClaim, n *corev1.Node) bool {
	if c.DeletionTimestamp != nil || conditionTrue(c, karpv1.ConditionTypeRebooting) {
		return true
	}
	if n == nil {
		return false
	}
	if n.DeletionTimestamp != nil || !ready(n) {
		return true
	}
	for _, t := range n.Spec.Taints {
		if t.MatchTaint(&karpv1.DisruptedNoScheduleTaint) {
			return true
		}
	}
	return false
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
