package budget

import (
	"fmt"
	"testing"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// The per-pass cost of the budget gate at a 1,000-node pool: the count over
// every claim and its node, and the allowance of a default and a
// business-hours budget (docs/performance.md, Disruption budget).
func BenchmarkCountOf1000(b *testing.B) {
	var cs []claimCase
	for i := range 1000 {
		c := claimCase{name: fmt.Sprintf("c-%04d", i), node: node(fmt.Sprintf("n-%04d", i), true, false)}
		if i%100 == 0 {
			c.node = node(c.node.Name, true, false, karpv1.DisruptedNoScheduleTaint)
		}
		cs = append(cs, c)
	}
	claims, nodes := claims(cs...)
	ours := []string{"c-0001", "c-0002"}
	b.ReportAllocs()
	for b.Loop() {
		_ = CountOf(claims, nodes, ours)
	}
}

func BenchmarkOf(b *testing.B) {
	np := pool(karpv1.Budget{Nodes: "10%"}, scheduled("0", "0 9 * * mon-fri", "8h"))
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		_ = Of(np, 1000, now)
	}
}
