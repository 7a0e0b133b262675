package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// labelled is a pool of the fixture with the given workload label.
func labelled(name, workload string, annotations ...string) *karpv1.NodePool {
	np := nodePool(name, annotations...)
	np.Labels = map[string]string{"workload": workload}
	return np
}

func selecting(name string, labels map[string]string, mutate ...func(*v1alpha1.RotationPolicySpec)) *v1alpha1.RotationPolicy {
	spec := alwaysOpen()
	spec.NodePoolSelector = metav1.LabelSelector{MatchLabels: labels}
	for _, m := range mutate {
		m(&spec)
	}
	return rotationPolicy(name, spec)
}

func statusReconciler(c client.Client) *PolicyStatusReconciler {
	return &PolicyStatusReconciler{Client: c, Log: logr.Discard(), Clock: func() time.Time { return now }}
}

// reconcileStatus reconciles one policy and returns its stored status.
func reconcileStatus(t *testing.T, c client.WithWatch, name string) v1alpha1.RotationPolicyStatus {
	t.Helper()
	res, err := statusReconciler(c).Reconcile(context.Background(), request(name))
	if err != nil {
		t.Fatal(err)
	}
	if res != (reconcile.Result{RequeueAfter: time.Minute}) {
		t.Errorf("result %+v, want the 1m backstop", res)
	}
	return get(t, c, name, "", &v1alpha1.RotationPolicy{}).Status
}

type cond struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

func checkCondition(t *testing.T, st v1alpha1.RotationPolicyStatus, typ string, want cond) {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, st.Conditions)
	}
	if c.Status != want.status || c.Reason != want.reason || c.Message != want.message || c.ObservedGeneration != 1 {
		t.Errorf("%s = %s %s %q (generation %d)\nwant %s %s %q", typ, c.Status, c.Reason, c.Message, c.ObservedGeneration, want.status, want.reason, want.message)
	}
}

var (
	accepted = cond{metav1.ConditionTrue, "Accepted", "valid and uncontested"}
	feasible = cond{metav1.ConditionTrue, "Covered", "every governed NodePool's nodes can be rotated before their deadlines, and none has a fatal finding"}
)

// Matched counts the pools the policy wins, Rotating those anchored.
func TestPolicyStatusCounts(t *testing.T) {
	c := newAPI(t, nil,
		selecting("api", map[string]string{"workload": "api"}),
		selecting("batch", map[string]string{"workload": "batch"}),
		labelled("api-1", "api", v1alpha1.AnnotationActiveRotation, "api-1-a"),
		labelled("api-2", "api"),
		labelled("api-3", "api", v1alpha1.AnnotationActiveRotation, ""),
		labelled("web", "web"),
		labelled("batch-1", "batch", v1alpha1.AnnotationActiveRotation, "batch-1-a"),
	)
	st := reconcileStatus(t, c, "api")
	if st.MatchedNodePools != 3 || st.RotatingNodePools != 1 || st.ObservedGeneration != 1 {
		t.Errorf("status matched %d rotating %d generation %d; want 3, 1, 1", st.MatchedNodePools, st.RotatingNodePools, st.ObservedGeneration)
	}
	checkCondition(t, st, "Ready", accepted)
	checkCondition(t, st, "Feasible", feasible)
	st = reconcileStatus(t, c, "batch")
	if st.MatchedNodePools != 1 || st.RotatingNodePools != 1 {
		t.Errorf("batch: matched %d rotating %d", st.MatchedNodePools, st.RotatingNodePools)
	}
}

// A more specific policy takes its pools away from a broader one.
func TestPolicyStatusMoreSpecificWins(t *testing.T) {
	team := selecting("api-team", map[string]string{"workload": "api", "team": "a"})
	pool := labelled("api-1", "api")
	pool.Labels["team"] = "a"
	c := newAPI(t, nil, selecting("api", map[string]string{"workload": "api"}), team, pool, labelled("api-2", "api"))
	if st := reconcileStatus(t, c, "api"); st.MatchedNodePools != 1 {
		t.Errorf("api matched %d, want 1", st.MatchedNodePools)
	}
	if st := reconcileStatus(t, c, "api-team"); st.MatchedNodePools != 1 {
		t.Errorf("api-team matched %d, want 1", st.MatchedNodePools)
	}
}

// An invalid policy is Ready=False Invalid with every problem, and its
// feasibility is unknown.
func TestPolicyStatusInvalid(t *testing.T) {
	bad := selecting("api", nil, func(s *v1alpha1.RotationPolicySpec) {
		s.Surge.ReadyTimeout = "0s"
		s.PrePull.UsePullSecrets = true
	})
	c := newAPI(t, nil, bad, selecting("other", nil), labelled("api-1", "api"))
	st := reconcileStatus(t, c, "api")
	checkCondition(t, st, "Ready", cond{metav1.ConditionFalse, "Invalid",
		`spec.surge.readyTimeout: "0s" must be greater than 0`})
	checkCondition(t, st, "Feasible", cond{metav1.ConditionUnknown, "Invalid", "the policy does not resolve"})
}

// A policy asking for usePullSecrets from a controller not granted Pods in
// every namespace is accepted, and Ready says the field is not in effect.
func TestPolicyStatusSaysUsePullSecretsIsNotInEffect(t *testing.T) {
	asking := selecting("api", nil, func(s *v1alpha1.RotationPolicySpec) {
		s.PrePull = v1alpha1.PrePullSpec{Enabled: true, UsePullSecrets: true}
	})
	c := newAPI(t, nil, asking, labelled("api-1", "api"))
	checkCondition(t, reconcileStatus(t, c, "api"), "Ready", cond{metav1.ConditionTrue, "Accepted", "valid and uncontested; " + pullSecretsNotGranted})
	r := statusReconciler(c)
	r.PullSecretsAllowed = true
	if _, err := r.Reconcile(context.Background(), request("api")); err != nil {
		t.Fatal(err)
	}
	got := &v1alpha1.RotationPolicy{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "api"}, got); err != nil {
		t.Fatal(err)
	}
	checkCondition(t, got.Status, "Ready", cond{metav1.ConditionTrue, "Accepted", "valid and uncontested"})
}

// A tie is Ready=False Conflict naming each pool and the other policies;
// the tied policies govern nothing.
func TestPolicyStatusConflict(t *testing.T) {
	c := newAPI(t, nil, selecting("a", nil), selecting("b", nil), selecting("c", nil), labelled("p2", "x"), labelled("p1", "y"))
	st := reconcileStatus(t, c, "a")
	checkCondition(t, st, "Ready", cond{metav1.ConditionFalse, "Conflict",
		"NodePool p1 ties with b, c; NodePool p2 ties with b, c: those NodePools are not rotated"})
	checkCondition(t, st, "Feasible", feasible)
	if st.MatchedNodePools != 0 {
		t.Errorf("matched %d", st.MatchedNodePools)
	}
	// Invalid wins over Conflict.
	c = newAPI(t, nil, selecting("a", nil, func(s *v1alpha1.RotationPolicySpec) { s.Surge.RetryBackoff = "-1m" }), selecting("b", nil), labelled("p1", "y"))
	checkCondition(t, reconcileStatus(t, c, "a"), "Ready", cond{metav1.ConditionFalse, "Invalid", `spec.surge.retryBackoff: "-1m" must be greater than 0`})
}

// Feasible is False with the fatal findings of each governed pool.
func TestPolicyStatusInfeasible(t *testing.T) {
	noWindows := selecting("api", map[string]string{"workload": "api"}, func(s *v1alpha1.RotationPolicySpec) { s.MaintenanceWindows = nil })
	c := newAPI(t, nil, noWindows, labelled("api-2", "api"), labelled("api-1", "api"), labelled("web", "web"))
	st := reconcileStatus(t, c, "api")
	checkCondition(t, st, "Ready", accepted)
	checkCondition(t, st, "Feasible", cond{metav1.ConditionFalse, "FatalFindings", "NodePool api-1: NoWindows; NodePool api-2: NoWindows"})
	// A pool whose expireAfter leaves no positive age threshold: 30m < Lead 49m.
	short := labelled("short", "api")
	e := 30 * time.Minute
	short.Spec.Template.Spec.ExpireAfter.Duration = &e
	c = newAPI(t, nil, selecting("api", map[string]string{"workload": "api"}), short)
	checkCondition(t, reconcileStatus(t, c, "api"), "Feasible", cond{metav1.ConditionFalse, "FatalFindings", "NodePool short: AgeThresholdNotPositive"})
}

// An unchanged status is not written again.
func TestPolicyStatusUnchangedIsNotWritten(t *testing.T) {
	c := newAPI(t, nil, selecting("api", map[string]string{"workload": "api"}), labelled("api-1", "api"))
	reconcileStatus(t, c, "api")
	first := get(t, c, "api", "", &v1alpha1.RotationPolicy{})
	reconcileStatus(t, c, "api")
	second := get(t, c, "api", "", &v1alpha1.RotationPolicy{})
	if first.ResourceVersion != second.ResourceVersion {
		t.Errorf("rewritten: %s → %s", first.ResourceVersion, second.ResourceVersion)
	}
	// A change is written.
	if err := c.Create(t.Context(), labelled("api-2", "api", v1alpha1.AnnotationActiveRotation, "x")); err != nil {
		t.Fatal(err)
	}
	if st := reconcileStatus(t, c, "api"); st.MatchedNodePools != 2 || st.RotatingNodePools != 1 {
		t.Errorf("after a new pool: %+v", st)
	}
}

func TestPolicyStatusErrors(t *testing.T) {
	boom := errors.New("boom")
	res, err := statusReconciler(newAPI(t, nil)).Reconcile(context.Background(), request("missing"))
	if err != nil || res != (reconcile.Result{}) {
		t.Errorf("missing policy: %+v, %v", res, err)
	}
	objs := []client.Object{selecting("api", nil), labelled("api-1", "api")}
	for _, c := range []struct {
		name    string
		funcs   interceptor.Funcs
		want    string
		requeue bool
	}{
		{"policies", interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, o ...client.ListOption) error {
			if _, ok := l.(*v1alpha1.RotationPolicyList); ok {
				return boom
			}
			return c.List(ctx, l, o...)
		}}, "listing RotationPolicies: boom", false},
		{"pools", interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, l client.ObjectList, o ...client.ListOption) error {
			if _, ok := l.(*karpv1.NodePoolList); ok {
				return boom
			}
			return c.List(ctx, l, o...)
		}}, "listing NodePools: boom", false},
		{"update", interceptor.Funcs{SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return boom
		}}, "updating the status of RotationPolicy api: boom", false},
		{"conflict", interceptor.Funcs{SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("rotationpolicies").GroupResource(), "api", boom)
		}}, "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := statusReconciler(newAPI(t, &c.funcs, objs...)).Reconcile(context.Background(), request("api"))
			switch {
			case c.want != "":
				if err == nil || err.Error() != c.want {
					t.Errorf("error %v, want %s", err, c.want)
				}
			case err != nil:
				t.Errorf("error %v", err)
			}
			if res.Requeue != c.requeue {
				t.Errorf("requeue %v, want %v", res.Requeue, c.requeue)
			}
		})
	}
}

// A pool whose nodes the policy cannot all rotate before their deadlines
// is Feasible=False ThroughputBelowArrival, naming the remedy; at the
// maxUnavailable it names, the same pool is covered again, and so it is
// at the default, auto.
func TestPolicyStatusCoverage(t *testing.T) {
	fleet := func(n any) *v1alpha1.RotationPolicy {
		return selecting("fleet", map[string]string{"workload": "big"}, func(s *v1alpha1.RotationPolicySpec) {
			s.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Tue", "Sat"}, Start: "02:00", End: "06:00"}}
			if n != nil {
				v := intstr.FromInt32(int32(n.(int)))
				s.Surge.MaxUnavailable = &v
			}
		})
	}
	objs := func(p *v1alpha1.RotationPolicy, budgets ...karpv1.Budget) []client.Object {
		big := labelled("big", "big")
		e := 720 * time.Hour
		big.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
		big.Spec.Disruption.Budgets = budgets
		out := []client.Object{p, big}
		for i := range 300 { // created evenly over the last 30 days: no burst
			c := nodeClaim(fmt.Sprintf("big-%03d", i), e-time.Duration(i)*(e/300), "")
			c.Labels[karpv1.NodePoolLabelKey] = "big"
			c.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
			c.CreationTimestamp = metav1.NewTime(now.Add(-time.Duration(i) * (e / 300)))
			out = append(out, c)
		}
		return out
	}
	st := reconcileStatus(t, newAPI(t, nil, objs(fleet(1))...), "fleet")
	c := meta.FindStatusCondition(st.Conditions, "Feasible")
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "ThroughputBelowArrival" ||
		!strings.HasPrefix(c.Message, "NodePool big: not covered: 300 nodes need") || !strings.Contains(c.Message, "maxUnavailable 6") {
		t.Fatalf("Feasible %+v", c)
	}
	checkCondition(t, reconcileStatus(t, newAPI(t, nil, objs(fleet(6))...), "fleet"), "Feasible", feasible)
	// the default, auto, picks the 6 itself
	checkCondition(t, reconcileStatus(t, newAPI(t, nil, objs(fleet(nil))...), "fleet"), "Feasible", feasible)
	// unless the NodePool's budget allows fewer: 1% of 300 is 3
	st = reconcileStatus(t, newAPI(t, nil, objs(fleet(nil), karpv1.Budget{Nodes: "1%"})...), "fleet")
	c = meta.FindStatusCondition(st.Conditions, "Feasible")
	if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "C at maxUnavailable 3, held by NodePool budget nodes=1%") || !strings.Contains(c.Message, "a NodePool budget that allows 6") {
		t.Fatalf("held by the budget: Feasible %+v", c)
	}
}
