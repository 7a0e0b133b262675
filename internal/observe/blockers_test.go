package observe

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/census"
)

func annotated(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Annotations = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func labelled(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Labels = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

func startedAgo(d time.Duration) func(*corev1.Pod) {
	return func(p *corev1.Pod) { t := metav1.NewTime(now.Add(-d)); p.Status.StartTime = &t }
}

func pdb(ns, name string, allowed int32, sel map[string]string) policyv1.PodDisruptionBudget {
	b := policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	b.Spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
	b.Spec.MinAvailable = &intstr.IntOrString{IntVal: 1}
	b.Status.DisruptionsAllowed = allowed
	b.Status.ExpectedPods, b.Status.CurrentHealthy = 2, 2
	return b
}

// Which Pods hold Karpenter's drain, as v1.13's terminator decides it.
func TestDrainBlockers(t *testing.T) {
	dnd := v1alpha1.KarpenterDoNotDisrupt
	pods := []corev1.Pod{
		*pod("dnd", "n", "1", annotated(dnd, "true")),
		*pod("dnd-for-1h-started-10m-ago", "n", "1", annotated(dnd, "1h"), startedAgo(10*time.Minute)),
		*pod("dnd-for-5m-started-10m-ago", "n", "1", annotated(dnd, "5m"), startedAgo(10*time.Minute)),
		*pod("dnd-false", "n", "1", annotated(dnd, "false")),
		*pod("dnd-done", "n", "1", annotated(dnd, "true"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		*pod("dnd-terminating", "n", "1", annotated(dnd, "true"), func(p *corev1.Pod) { t := metav1.NewTime(now); p.DeletionTimestamp = &t }),
		*pod("dnd-mirror", "n", "1", annotated(dnd, "true"), func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: "Node", Name: "n"}}
		}),
		*pod("dnd-tolerating", "n", "1", annotated(dnd, "true"), func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: karpv1.DisruptedTaintKey, Operator: corev1.TolerationOpExists}}
		}),
		*pod("guarded", "n", "1", labelled("app", "db")),
		*pod("guarded-with-room", "n", "1", labelled("app", "web")),
		*pod("guarded-recovering", "n", "1", labelled("app", "cache")),
		*pod("guarded-pending", "n", "1", labelled("app", "db"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
		*pod("two-budgets", "n", "1", labelled("app", "web", "tier", "front")),
		*pod("other-namespace", "n", "1", labelled("app", "db"), func(p *corev1.Pod) { p.Namespace = "elsewhere" }),
		*pod("placeholder", "n", "1", labelled(v1alpha1.LabelSurgeFor, "c", "app", "db")),
		*pod("plain", "n", "1"),
	}
	recovering := pdb("apps", "cache", 0, map[string]string{"app": "cache"})
	recovering.Status.CurrentHealthy = 1 // one Pod still starting after a drain
	pdbs := []policyv1.PodDisruptionBudget{pdb("apps", "db", 0, map[string]string{"app": "db"}), pdb("apps", "web", 1, map[string]string{"app": "web"}), recovering,
		pdb("apps", "front", 3, map[string]string{"tier": "front"})}
	got := DrainBlockers(pods, pdbs, now)
	want := []census.Blocker{
		{Pod: "apps/dnd", Reason: census.BlockedDoNotDisrupt},
		{Pod: "apps/dnd-for-1h-started-10m-ago", Reason: census.BlockedDoNotDisrupt},
		{Pod: "apps/guarded", Reason: census.BlockedPDB},
		{Pod: "apps/two-budgets", Reason: census.BlockedPDB}, // the eviction API refuses a Pod two budgets select
	}
	if !slices.Equal(got, want) {
		t.Errorf("blockers\n got %v\nwant %v", got, want)
	}
	// policy/v1: an empty selector selects every Pod of its namespace.
	all := pdb("apps", "all", 0, nil)
	all.Spec.Selector = &metav1.LabelSelector{}
	if got := DrainBlockers([]corev1.Pod{*pod("plain", "n", "1")}, []policyv1.PodDisruptionBudget{all}, now); len(got) != 1 {
		t.Errorf("an empty selector: blockers %v, want the Pod", got)
	}
}

// The observer passes over a candidate whose node runs a do-not-disrupt
// Pod; it lists each node's Pods once per pass (the placeholder's sizing
// reuses the list) and the PodDisruptionBudgets once.
func TestObserverPassesOverADrainBlockedCandidate(t *testing.T) {
	night := rotationPolicy("api", alwaysOpen())
	night.Spec.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: everyDay, Start: "00:00", End: "23:00"}}
	objs := []client.Object{night, nodePool(),
		// both due (the lead is two days and t_rot); early's last usable
		// window opens tomorrow at midnight, so it is not urgent yet
		nodeClaim("early", 30*time.Hour, "node-early"), nodeClaim("late", 40*time.Hour, "node-late"),
		node("node-early"), node("node-late"),
		pod("job", "node-early", "1", annotated(v1alpha1.KarpenterDoNotDisrupt, "true")), pod("web", "node-late", "1"),
	}
	var mu sync.Mutex
	lists := map[string]int{}
	funcs := &interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		lo := (&client.ListOptions{}).ApplyOptions(opts)
		mu.Lock()
		switch list.(type) {
		case *corev1.PodList:
			if lo.FieldSelector != nil {
				lists["pods "+lo.FieldSelector.String()]++
			}
		case *policyv1.PodDisruptionBudgetList:
			lists["pdbs"]++
		}
		mu.Unlock()
		return c.List(ctx, list, opts...)
	}}
	obs, err := observerOn(newClient(t, funcs, objs...), now).Observe(context.Background(), "general", NoCap)
	if err != nil {
		t.Fatal(err)
	}
	if c := obs.Candidate(); c == nil || c.Claim.Name != "late" {
		t.Fatalf("candidate %v, want late: early's node runs a do-not-disrupt Pod", obs.Candidate())
	}
	if b := obs.Census.Blocked["early"]; len(b.Blockers) != 1 || b.Blockers[0].Pod != "apps/job" {
		t.Errorf("blocked %+v", obs.Census.Blocked)
	}
	if obs.Snapshot.CandidateDrainBlocked {
		t.Error("the snapshot says the candidate is blocked")
	}
	want := map[string]int{"pods spec.nodeName=node-early": 1, "pods spec.nodeName=node-late": 1, "pdbs": 1}
	for k, n := range want {
		if lists[k] != n {
			t.Errorf("%s listed %d times, want %d (all: %v)", k, lists[k], n, lists)
		}
	}
	if obs.Sizing == nil {
		t.Error("the start was not sized")
	}
}

// Taken for its deadline: the snapshot says so, and the candidate carries
// its blockers for the DrainBlocked Warning.
func TestObserverTakesAnUrgentDrainBlockedCandidate(t *testing.T) {
	night := rotationPolicy("api", alwaysOpen())
	night.Spec.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: everyDay, Start: "00:00", End: "23:00"}}
	obs := observeNow(t, night, nodePool(),
		nodeClaim("early", 30*time.Minute, "node-early"), nodeClaim("late", 9*time.Hour, "node-late"),
		node("node-early"), node("node-late"),
		pod("job", "node-early", "1", annotated(v1alpha1.KarpenterDoNotDisrupt, "true")))
	c := obs.Candidate()
	if c == nil || c.Claim.Name != "early" || len(c.Blockers) != 1 || !obs.Snapshot.CandidateDrainBlocked {
		t.Fatalf("candidate %+v, snapshot blocked %v: want early, taken with its blocker", c, obs.Snapshot.CandidateDrainBlocked)
	}
}
