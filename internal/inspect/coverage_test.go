package inspect

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// A governed pool its policy cannot cover says so in the POLICY column,
// and explain gives the verdict in words with its remedy.
func TestUncoveredPoolIsShown(t *testing.T) {
	c := &schedule.Coverage{Applies: true, Reason: "ThroughputBelowArrival", Nodes: 300, Arrival: 54.7, Capacity: 10, InForce: 1, Needed: 6}
	st := &PoolStatus{NodePool: "big", Governance: governed, Policy: "fleet", Feasible: true, Coverage: c}
	if got := policyCell(st); got != "fleet (uncovered)" {
		t.Errorf("policy cell %q", got)
	}
	var out bytes.Buffer
	if err := RenderPool(&out, &PoolExplanation{Status: st}, "table"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Coverage           not covered: 300 nodes need 54.7 rotations per occurrence (N·P/A), and 10 fit (C at maxUnavailable 1); maxUnavailable 6 would cover it") {
		t.Errorf("explain:\n%s", out.String())
	}
	c.Covered = true
	if got := policyCell(st); got != "fleet" {
		t.Errorf("covered: policy cell %q", got)
	}
}

// The live plan of the pool: 300 claims created over the last 30
// days under two 4-hour windows a week, one rotation at a time — not
// covered, maxUnavailable 6 named, and many claims forecast to Karpenter's
// expiry in four weeks; at maxUnavailable 6, covered, and only the claims
// due before the first window forecast lost.
func TestLiveCoverageOfTheFleetPool(t *testing.T) {
	objs := func(n int, budgets ...karpv1.Budget) []client.Object {
		e := 720 * time.Hour
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "big", Labels: map[string]string{"fleet": "300"}}}
		np.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
		np.Spec.Disruption.Budgets = budgets
		spec := v1alpha1.RotationPolicySpec{
			NodePoolSelector:   metav1.LabelSelector{MatchLabels: map[string]string{"fleet": "300"}},
			MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Tue", "Sat"}, Start: "02:00", End: "06:00"}},
		}
		mu := intstr.FromInt32(int32(n))
		spec.Surge.MaxUnavailable = &mu
		out := []client.Object{np, &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fleet-300"}, Spec: spec}}
		for i := range 300 {
			c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%03d", i), Labels: map[string]string{karpv1.NodePoolLabelKey: "big"},
				CreationTimestamp: metav1.NewTime(now.Add(-time.Duration(i) * e / 300))}}
			c.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
			c.Status.Conditions = []status.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
			out = append(out, c)
		}
		return out
	}
	pc, err := inspector(t, objs(1)...).Coverage(context.Background(), "big")
	if err != nil || pc == nil {
		t.Fatalf("coverage %+v, %v", pc, err)
	}
	if pc.Coverage.Covered || pc.Coverage.Needed != 6 || pc.Policy != "fleet-300" || len(pc.Expiring) < 100 || pc.Covers() {
		t.Errorf("one at a time: %+v, %d expiring", pc.Coverage, len(pc.Expiring))
	}
	var out bytes.Buffer
	if err := RenderCoverage(&out, []*PoolCoverage{pc}, "table"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"big       fleet-300  300", "  windowClosed  ", "ThroughputBelowArrival", "big: not covered: 300 nodes need", "big: forecast force-expired by Karpenter within 4 weeks: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
	six, err := inspector(t, objs(6)...).Coverage(context.Background(), "big")
	if err != nil || !six.Coverage.Covered || len(six.Expiring) >= len(pc.Expiring) {
		t.Fatalf("six at a time: %+v, %d expiring, %v", six.Coverage, len(six.Expiring), err)
	}
	// a NodePool budget of 1% (3 nodes) holds the six to three: the
	// verdict names it, and the forecast loses more claims than at six
	held, err := inspector(t, objs(6, karpv1.Budget{Nodes: "1%"})...).Coverage(context.Background(), "big")
	if err != nil || held.Coverage.Covered || held.Coverage.InForce != 3 || held.Coverage.HeldBy != "nodes=1%" || len(held.Expiring) <= len(six.Expiring) {
		t.Errorf("held by the budget: %+v, %d expiring against %d, %v", held.Coverage, len(held.Expiring), len(six.Expiring), err)
	}
	// now is a Tuesday noon: the first window opens Saturday 02:00
	saturday := time.Date(2026, 12, 5, 2, 15, 0, 0, time.UTC)
	for _, d := range six.Expiring {
		if !d.Deadline.Before(saturday) {
			t.Errorf("%s (deadline %s) forecast lost at six at a time: only claims due before the first window's first rotation ends are", d.Name, d.Deadline)
		}
	}
}

// A pool two policies tie for is not rotated at all: the live plan shows
// it, blocked, instead of leaving it out.
func TestLiveCoverageShowsATiedPool(t *testing.T) {
	spec := v1alpha1.RotationPolicySpec{
		NodePoolSelector:   metav1.LabelSelector{MatchLabels: map[string]string{"tie": "yes"}},
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Sat"}, Start: "02:00", End: "06:00"}},
	}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "tied", Labels: map[string]string{"tie": "yes"}}}
	in := inspector(t, np, &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: spec}, &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: spec})
	pc, err := in.Coverage(context.Background(), "tied")
	if err != nil || pc == nil || !pc.Blocked() || pc.Covers() || !strings.Contains(pc.Problem, "conflict: a,b") {
		t.Fatalf("tied pool: %+v, %v", pc, err)
	}
	var out bytes.Buffer
	if err := RenderCoverage(&out, []*PoolCoverage{pc}, "table"); err != nil || !strings.Contains(out.String(), "not rotated") || !strings.Contains(out.String(), "tied: conflict: a,b") {
		t.Errorf("table:\n%s (%v)", out.String(), err)
	}
}
