package observe

import (
	"strings"
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

func initialized(c *karpv1.NodeClaim) {
	c.Status.Conditions = append(c.Status.Conditions, status.Condition{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue})
}

func budgets(b ...karpv1.Budget) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) { np.Spec.Disruption.Budgets = b }
}

func consolidating(n *corev1.Node) {
	n.Spec.Taints = append(n.Spec.Taints, karpv1.DisruptedNoScheduleTaint)
}

// freeSlotHeld observes and says whether the free slot's snapshot is held
// by the disruption budget.
func freeSlotHeld(t *testing.T, obs *Observation) bool {
	t.Helper()
	f := obs.FreeSlot()
	if f == nil {
		t.Fatal("no free slot")
	}
	return f.Snapshot.Pool.BudgetReached
}

// The disruptionBudget gate's input (docs/design.md#disruption-budget):
// the free slot may start while the pool's disruptions, Karpenter's and
// its rotations', are fewer than both the number in force and the
// strictest budget in force.
func TestBudgetReached(t *testing.T) {
	claims := func(mods ...func(*karpv1.NodeClaim)) []*karpv1.NodeClaim {
		var out []*karpv1.NodeClaim
		for _, n := range []string{"a", "b", "c", "d"} {
			out = append(out, nodeClaim(n, 10*time.Minute, "node-"+n, append([]func(*karpv1.NodeClaim){initialized}, mods...)...))
		}
		return out
	}
	world := func(pol *v1alpha1.RotationPolicy, np *karpv1.NodePool, nodeMods map[string]func(*corev1.Node)) *Observation {
		objs := []client.Object{pol, np}
		for _, c := range claims() {
			objs = append(objs, c)
		}
		for _, n := range []string{"a", "b", "c", "d"} {
			var mods []func(*corev1.Node)
			if m := nodeMods[n]; m != nil {
				mods = append(mods, m)
			}
			objs = append(objs, node("node-"+n, mods...))
		}
		return observeNow(t, objs...)
	}
	ignoring := governingAt(2)
	ignoring.Spec.Surge.NodePoolBudgets = v1alpha1.BudgetsIgnore

	for _, c := range []struct {
		name   string
		pol    *v1alpha1.RotationPolicy
		np     *karpv1.NodePool
		nodes  map[string]func(*corev1.Node)
		held   bool
		nodesN int
	}{
		{name: "no budget, nothing disrupted", pol: governingAt(1), np: nodePool(), held: false, nodesN: 4},
		{name: "a budget of 0 in force", pol: governingAt(1), np: nodePool(budgets(karpv1.Budget{Nodes: "0"})), held: true, nodesN: 4},
		{name: "a budget of 0 the policy ignores", pol: func() *v1alpha1.RotationPolicy {
			p := governingAt(1)
			p.Spec.Surge.NodePoolBudgets = v1alpha1.BudgetsIgnore
			return p
		}(), np: nodePool(budgets(karpv1.Budget{Nodes: "0"})), held: false},
		{name: "Karpenter consolidating one node takes the one rotation in force", pol: governingAt(1), np: nodePool(),
			nodes: map[string]func(*corev1.Node){"b": consolidating}, held: true, nodesN: 4},
		{name: "Karpenter consolidating one node leaves one of two", pol: governingAt(2), np: nodePool(),
			nodes: map[string]func(*corev1.Node){"b": consolidating}, held: false, nodesN: 4},
		{name: "Karpenter's one and the pool's rotation fill a budget of 2", pol: governingAt(3), np: nodePool(budgets(karpv1.Budget{Nodes: "2"}), inSlot(1, "a", "pending")),
			nodes: map[string]func(*corev1.Node){"b": consolidating}, held: true, nodesN: 4},
		{name: "a NotReady node counts, as Karpenter counts it", pol: governingAt(3), np: nodePool(budgets(karpv1.Budget{Nodes: "1"})),
			nodes: map[string]func(*corev1.Node){"c": func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }}, held: true, nodesN: 4},
		{name: "the pool's own rotation below the number in force leaves room", pol: governingAt(2), np: nodePool(inSlot(1, "a", "pending")), held: false, nodesN: 4},
		{name: "25% of 4 is 1, used by the pool's rotation", pol: governingAt(2), np: nodePool(budgets(karpv1.Budget{Nodes: "25%"}), inSlot(1, "a", "pending")), held: true, nodesN: 4},
		{name: "Ignore counts Karpenter's disruptions against nothing", pol: ignoring, np: nodePool(inSlot(1, "a", "pending")),
			nodes: map[string]func(*corev1.Node){"b": consolidating}, held: false},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs := world(c.pol, c.np, c.nodes)
			if got := freeSlotHeld(t, obs); got != c.held {
				t.Errorf("held = %v, want %v (disrupted %v, budget %+v, in force %d)", got, c.held, obs.Disruption.Disrupted, obs.Budget, obs.InForce.N)
			}
			if obs.Disruption.Nodes != c.nodesN {
				t.Errorf("counted nodes %d, want %d", obs.Disruption.Nodes, c.nodesN)
			}
		})
	}
}

// A rotation in flight is never held: under a budget of 0 with Karpenter
// disrupting another node, the anchored pending slot still decides a
// pending row, while the free slot is held.
func TestBudgetReachedSparesTheRotationInFlight(t *testing.T) {
	obs := observeNow(t, governingAt(2), nodePool(budgets(karpv1.Budget{Nodes: "0"}), anchored("a")),
		nodeClaim("a", 10*time.Minute, "node-a", initialized, inState("pending"), startedAt(now.Add(-time.Minute))),
		nodeClaim("b", 10*time.Minute, "node-b", initialized), nodeClaim("c", 10*time.Minute, "node-c", initialized),
		node("node-a"), node("node-b", consolidating), node("node-c"))
	s := obs.Slots[0]
	if s.Anchor() != "a" {
		t.Fatalf("slot %d anchors %q, want a", s.Slot, s.Anchor())
	}
	d, err := shipped.DecideMachine(&s.Snapshot, "rotation")
	if err != nil {
		t.Fatal(err)
	}
	if d.From != "pending" || !strings.HasPrefix(d.Transition, "pending.") {
		t.Errorf("the rotation in flight decided %s from %s, want a pending row", d.Transition, d.From)
	}
	f := obs.FreeSlot()
	if f == nil {
		t.Fatal("no free slot at maxUnavailable 2 with one in flight")
	}
	if d, err := shipped.DecideMachine(&f.Snapshot, "rotation"); err != nil || d.Transition != "idle.disruption-budget" {
		t.Errorf("the free slot decided %s (%v), want idle.disruption-budget", d.Transition, err)
	}
}

// A budget whose schedule is in force carries its end for the wake-up.
func TestBudgetUntilIsTheSnapshots(t *testing.T) {
	sched, d := "0 9 * * *", metav1.Duration{Duration: 8 * time.Hour}
	obs := observeNow(t, governingAt(1), nodePool(budgets(karpv1.Budget{Nodes: "0", Schedule: &sched, Duration: &d})),
		nodeClaim("a", 400*time.Hour, "node-a", initialized), node("node-a"))
	if got := obs.FreeSlot().Snapshot.Pool.BudgetUntil; got != "2026-11-30T17:00:00Z" {
		t.Errorf("budget until %q, want 2026-11-30T17:00:00Z", got)
	}
	// nothing else changes before it: the claim is 400h from its deadline
	if end := time.Date(2026, 11, 30, 17, 0, 0, 0, time.UTC); !obs.NextInstant.Equal(end) {
		t.Errorf("next instant %v, want the budget's end %v", obs.NextInstant, end)
	}
}
