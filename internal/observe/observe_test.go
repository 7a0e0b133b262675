package observe

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

func TestObserveMissingPool(t *testing.T) {
	obs, err := observerOn(newClient(t, nil, governing()), now).Observe(context.Background(), "general", NoCap)
	if obs != nil || err != nil {
		t.Errorf("Observe of a missing pool = %v, %v; want nil, nil", obs, err)
	}
}

func TestObserveReadErrors(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name  string
		funcs interceptor.Funcs
		want  string
	}{
		{"pool", interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*karpv1.NodePool); ok {
				return boom
			}
			return c.Get(ctx, key, obj, opts...)
		}}, "reading NodePool general: boom"},
		{"policies", interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*v1alpha1.RotationPolicyList); ok {
				return boom
			}
			return c.List(ctx, list, opts...)
		}}, "listing RotationPolicies: boom"},
		{"claims", interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*karpv1.NodeClaimList); ok {
				return boom
			}
			return c.List(ctx, list, opts...)
		}}, "listing NodeClaims of general: boom"},
		{"pods", interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok && (&client.ListOptions{}).ApplyOptions(opts).FieldSelector != nil {
				return boom
			}
			return c.List(ctx, list, opts...)
		}}, "listing Pods on node node-a: boom"},
		{"placeholders", interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok && (&client.ListOptions{}).ApplyOptions(opts).FieldSelector == nil {
				return boom
			}
			return c.List(ctx, list, opts...)
		}}, "listing the placeholders of general: boom"},
		{"nodes", interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.NodeList); ok {
				return boom
			}
			return c.List(ctx, list, opts...)
		}}, "listing the nodes of general: boom"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := newClient(t, &c.funcs, nodePool(), governing(), nodeClaim("general-a", 20*time.Minute, "node-a"), node("node-a"))
			obs, err := observerOn(cl, now).Observe(context.Background(), "general", NoCap)
			if obs != nil || err == nil || err.Error() != c.want || !errors.Is(err, boom) {
				t.Errorf("Observe = %v, %v; want %q", obs, err, c.want)
			}
		})
	}
}

func TestGovernanceStates(t *testing.T) {
	catchAll := func(name string) *v1alpha1.RotationPolicy {
		spec := alwaysOpen()
		spec.NodePoolSelector = metav1.LabelSelector{}
		return rotationPolicy(name, spec)
	}
	invalid := alwaysOpen()
	invalid.Surge.ReadyTimeout = "0s"
	batch := alwaysOpen()
	batch.NodePoolSelector.MatchLabels = map[string]string{"workload": "batch"}
	cases := []struct {
		name     string
		policies []client.Object
		want     string
		conflict []string
		policy   string
	}{
		{"no policy", nil, "ungoverned", nil, ""},
		{"no match", []client.Object{rotationPolicy("batch", batch)}, "ungoverned", nil, ""},
		{"tie", []client.Object{catchAll("b"), catchAll("a")}, "conflict", []string{"a", "b"}, ""},
		{"invalid", []client.Object{rotationPolicy("api", invalid)}, "invalid", nil, "api"},
		{"governed", []client.Object{governing(), catchAll("fallback")}, "governed", nil, "api"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := append([]client.Object{nodePool(), nodeClaim("general-a", 20*time.Minute, ""), nodeClaim("general-b", 3*time.Hour, "")}, c.policies...)
			obs := observeNow(t, objs...)
			if got := obs.GovernanceState(); got != c.want || obs.Snapshot.Pool.Governance != c.want {
				t.Errorf("governance %q (snapshot %q), want %q", got, obs.Snapshot.Pool.Governance, c.want)
			}
			if obs.Governed() != (c.want == "governed") {
				t.Errorf("Governed() = %v", obs.Governed())
			}
			if !reflect.DeepEqual(obs.Governance.Conflict, c.conflict) {
				t.Errorf("conflict %v, want %v", obs.Governance.Conflict, c.conflict)
			}
			if got := ""; obs.Governance.Policy != nil {
				if got = obs.Governance.Policy.Name; got != c.policy {
					t.Errorf("policy %q, want %q", got, c.policy)
				}
			} else if c.policy != "" {
				t.Errorf("no policy, want %q", c.policy)
			}
			if c.want == "governed" {
				if obs.Census.Census.Candidates != 1 || obs.Candidate() == nil || nameOf(obs.Subject) != "general-a" || obs.Snapshot.Candidate != "surge" {
					t.Errorf("governed: census %+v subject %s candidate %s", obs.Census.Census, nameOf(obs.Subject), obs.Snapshot.Candidate)
				}
				return
			}
			// Not governed: the census is only the claim count, nothing is
			// selected, sized or assessed.
			if obs.Census.Census != (census.Census{Total: 2}) || obs.Candidate() != nil || obs.Subject != nil || obs.Sizing != nil ||
				obs.Findings != nil || obs.Snapshot.Candidate != "none" || obs.WindowOpen {
				t.Errorf("not governed: census %+v candidate %v subject %v sizing %v findings %v", obs.Census.Census, obs.Candidate(), obs.Subject, obs.Sizing, obs.Findings)
			}
		})
	}
	obs := observeNow(t, nodePool(), rotationPolicy("api", invalid))
	if obs.PolicyErr == nil || !strings.Contains(obs.PolicyErr.Error(), `spec.surge.readyTimeout: "0s" must be greater than 0`) {
		t.Errorf("PolicyErr = %v", obs.PolicyErr)
	}
}

// An idle governed pool selects the candidate as the subject, reads its
// node and sizes the placeholder from the Pods on it.
func TestObserveIdleGovernedPool(t *testing.T) {
	objs := append(workloads(),
		nodePool(), governing(),
		nodeClaim("general-a", 20*time.Minute, "node-a"),
		nodeClaim("general-b", 3*time.Hour, "node-b"),
		nodeClaim("general-c", 30*time.Minute, "node-c"),
		nodeClaim("general-d", 25*time.Minute, ""), // due, but no node to avoid
		node("node-a"), node("node-b"), node("node-c"),
	)
	obs := observeNow(t, objs...)
	if nameOf(obs.Subject) != "general-a" || obs.SubjectName != "general-a" || obs.Candidate().Claim != obs.Subject {
		t.Fatalf("subject %s (%q)", nameOf(obs.Subject), obs.SubjectName)
	}
	if obs.OldNode == nil || obs.OldNode.Name != "node-a" || obs.Placeholder != nil || obs.SurgeHost != nil || obs.SurgeHostClaim != nil || obs.InducedClaim != nil {
		t.Errorf("around: old %v placeholder %v host %v", obs.OldNode, obs.Placeholder, obs.SurgeHost)
	}
	if obs.Sizing == nil {
		t.Fatal("no sizing for a start")
	}
	if cpu := obs.Sizing.Requests[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("1500m")) != 0 {
		t.Errorf("placeholder cpu %s, want the 1500m of the two Pods that move", cpu.String())
	}
	if obs.Sizing.Excluded != (surge.Exclusions{DaemonSet: 1, Terminal: 1}) {
		t.Errorf("excluded %+v", obs.Sizing.Excluded)
	}
	if obs.Shortfall != nil || !obs.Snapshot.Surge.Headroom {
		t.Errorf("a pool without limits has headroom: %+v", obs.Shortfall)
	}
	// The old node and the nodes of the other due claims are avoided.
	if want := []string{"host-node-a", "host-node-c"}; !reflect.DeepEqual(obs.AvoidHostnames, want) {
		t.Errorf("avoid %v, want %v", obs.AvoidHostnames, want)
	}
	want := engine.Snapshot{
		Now:  now,
		Pool: engine.PoolObservation{Governance: "governed", Feasible: true, WindowOpen: true},
		Policy: engine.PolicyObservation{
			ReadyTimeout: engine.Duration(15 * time.Minute), CooldownAfter: engine.Duration(10 * time.Minute),
			FailurePause: engine.Duration(10 * time.Minute), DrainBound: engine.Duration(32 * time.Minute),
		},
		Candidate: "surge", Stranded: "none",
		Surge:       engine.SurgeObservation{Headroom: true},
		Outstanding: 3, // a, c and d
	}
	if !reflect.DeepEqual(obs.Snapshot, want) {
		t.Errorf("snapshot\n got %+v\nwant %+v", obs.Snapshot, want)
	}
	if obs.Census.Census.NotDue != 1 || obs.Derivation.Lead != lead || !obs.WindowOpen || len(obs.Findings) != 0 {
		t.Errorf("census %+v lead %s findings %v", obs.Census.Census, obs.Derivation.Lead, obs.Findings)
	}
}

// NodePool limits that cannot hold the placeholder are a shortfall.
func TestObserveShortfall(t *testing.T) {
	limited := nodePool(func(np *karpv1.NodePool) {
		np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("10")}
		np.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("9")}
	})
	obs := observeNow(t, append(workloads(), limited, governing(), nodeClaim("general-a", 20*time.Minute, "node-a"), node("node-a"))...)
	sf := obs.Shortfall
	if sf == nil || obs.Snapshot.Surge.Headroom {
		t.Fatal("no shortfall")
	}
	if sf.Resource != corev1.ResourceCPU || sf.Want.String() != "1500m" || sf.Remaining.String() != "1" || sf.Limit.String() != "10" {
		t.Errorf("shortfall %s want %s remaining %s limit %s", sf.Resource, sf.Want.String(), sf.Remaining.String(), sf.Limit.String())
	}
}

// An operator's do-not-disrupt on a claim's node opts the claim out; our
// own (marked owned) does not.
func TestObserveOptedOut(t *testing.T) {
	operator := node("node-a", func(n *corev1.Node) { n.Annotations[v1alpha1.KarpenterDoNotDisrupt] = "true" })
	ours := node("node-b", func(n *corev1.Node) {
		n.Annotations[v1alpha1.KarpenterDoNotDisrupt] = "true"
		n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned] = "true"
	})
	obs := observeNow(t, nodePool(), governing(), operator, ours,
		nodeClaim("general-a", 20*time.Minute, "node-a"),
		nodeClaim("general-b", 30*time.Minute, "node-b"),
		nodeClaim("general-c", 40*time.Minute, "node-gone"), // node not found: not opted out
	)
	if c := obs.Census.Census; c.OptedOut != 1 || c.Candidates != 2 {
		t.Errorf("census %+v", c)
	}
	if nameOf(obs.Subject) != "general-b" {
		t.Errorf("subject %s, want general-b (general-a is opted out)", nameOf(obs.Subject))
	}
}

// An anchored pool is about the anchored claim, whatever the census would
// select, with its placeholder, the surge host and the host's claim.
func TestObserveAnchoredPending(t *testing.T) {
	started := now.Add(-5 * time.Minute)
	obs := observeNow(t, append(workloads(),
		nodePool(anchored("general-a")), governing(),
		nodeClaim("general-a", 40*time.Minute, "node-a", inState(v1alpha1.StatePending), startedAt(started)),
		fresh("general-b", now.Add(-4*time.Minute), "node-b"),
		nodeClaim("general-c", 20*time.Minute, "node-c"), // the census's candidate
		node("node-a"), node("node-b"), node("node-c"),
		placeholderPod("general-a", "node-b"),
	)...)
	if nameOf(obs.Subject) != "general-a" || obs.SubjectName != "general-a" || nameOf(obs.Candidate().Claim) != "general-c" {
		t.Fatalf("subject %s candidate %s", nameOf(obs.Subject), nameOf(obs.Candidate().Claim))
	}
	if obs.OldNode == nil || obs.OldNode.Name != "node-a" || obs.Placeholder == nil || obs.Placeholder.Name != "nrc-surge-general-a" ||
		obs.SurgeHost == nil || obs.SurgeHost.Name != "node-b" || nameOf(obs.SurgeHostClaim) != "general-b" {
		t.Fatalf("around: old %v placeholder %v host %v host claim %s", obs.OldNode, obs.Placeholder, obs.SurgeHost, nameOf(obs.SurgeHostClaim))
	}
	if nameOf(obs.InducedClaim) != "general-b" {
		t.Errorf("induced %s, want the host's claim created since started-at", nameOf(obs.InducedClaim))
	}
	if obs.Sizing != nil || obs.Shortfall != nil {
		t.Errorf("sized although the placeholder exists: %+v", obs.Sizing)
	}
	s := obs.Snapshot
	if s.Pool.Anchor != "general-a" || s.Claim != (engine.ClaimObservation{Exists: true, State: "pending", StartedAt: stamp(started)}) {
		t.Errorf("snapshot pool %+v claim %+v", s.Pool, s.Claim)
	}
	// The placeholder is not Running yet: not ready.
	if s.Surge != (engine.SurgeObservation{PlaceholderExists: true, Ready: false, Headroom: true}) {
		t.Errorf("surge %+v", s.Surge)
	}
}

// surge_ready: the placeholder Running on a Ready node of the pool.
func TestObserveSurgeReady(t *testing.T) {
	running := placeholderPod("general-a", "node-b")
	running.Status.Phase = corev1.PodRunning
	obs := observeNow(t, nodePool(anchored("general-a")), governing(),
		nodeClaim("general-a", 40*time.Minute, "node-a", inState(v1alpha1.StatePending), startedAt(now.Add(-time.Minute))),
		node("node-a"), node("node-b"), running)
	if !obs.Snapshot.Surge.Ready || !obs.Snapshot.Surge.PlaceholderExists {
		t.Errorf("surge %+v", obs.Snapshot.Surge)
	}
	notReady := node("node-b", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse })
	running = placeholderPod("general-a", "node-b")
	running.Status.Phase = corev1.PodRunning
	obs = observeNow(t, nodePool(anchored("general-a")), governing(),
		nodeClaim("general-a", 40*time.Minute, "node-a", inState(v1alpha1.StatePending)), node("node-a"), notReady, running)
	if obs.Snapshot.Surge.Ready {
		t.Error("a placeholder on a NotReady node is ready")
	}
}

// The placeholder is sized only when this pass may create one: a start, a
// retry of a failed claim, or a pending claim whose placeholder is missing.
func TestObserveSizesOnlyWhenAPlaceholderMayBeCreated(t *testing.T) {
	for _, c := range []struct {
		state string
		sized bool
	}{{"", true}, {v1alpha1.StatePending, true}, {v1alpha1.StateFailed, true}, {v1alpha1.StateDraining, false}, {v1alpha1.StateExpired, false}} {
		claim := nodeClaim("general-a", 40*time.Minute, "node-a", inState(c.state),
			claimAnnotations(v1alpha1.AnnotationFailedAt, stamp(now.Add(-time.Hour))))
		obs := observeNow(t, append(workloads(), nodePool(anchored("general-a")), governing(), claim, node("node-a"))...)
		if (obs.Sizing != nil) != c.sized {
			t.Errorf("state %q: sized %v, want %v", c.state, obs.Sizing != nil, c.sized)
		}
	}
	// A subject without a node is sized from nothing.
	obs := observeNow(t, nodePool(), governing(), nodeClaim("general-a", 20*time.Minute, ""))
	if obs.Sizing == nil || len(obs.Sizing.Requests) != 0 || obs.OldNode != nil {
		t.Errorf("node-less subject: sizing %+v old node %v", obs.Sizing, obs.OldNode)
	}
}

// An anchor naming a claim of another pool stops the pass.
func TestObserveForeignAnchor(t *testing.T) {
	cl := newClient(t, nil, nodePool(anchored("other-a")), governing(),
		nodeClaim("other-a", 40*time.Minute, "", ofPool("other"), inState(v1alpha1.StatePending)))
	obs, err := observerOn(cl, now).Observe(context.Background(), "general", NoCap)
	var bad *BadStateError
	if obs != nil || !errors.As(err, &bad) {
		t.Fatalf("Observe = %v, %v; want a *BadStateError", obs, err)
	}
	want := census.BadAnnotation{Object: "NodePool/general", Key: v1alpha1.AnnotationActiveRotation, Value: "other-a", Problem: `names a NodeClaim of NodePool "other"`}
	if bad.BadAnnotation != want {
		t.Errorf("bad %+v", bad.BadAnnotation)
	}
	if got := err.Error(); got != `NodePool/general: annotation noderotation.io/active-rotation="other-a" names a NodeClaim of NodePool "other"` {
		t.Errorf("error text %s", got)
	}
}

// An anchor naming a claim that no longer exists: the rotation's claim is
// gone, nothing around it is read.
func TestObserveMissingAnchoredClaim(t *testing.T) {
	obs := observeNow(t, nodePool(anchored("general-a")), governing(), nodeClaim("general-b", 20*time.Minute, "node-b"), node("node-b"))
	if obs.Subject != nil || obs.SubjectName != "general-a" || obs.OldNode != nil || obs.Sizing != nil || obs.InducedClaim != nil {
		t.Errorf("subject %v (%q) old %v sizing %v", obs.Subject, obs.SubjectName, obs.OldNode, obs.Sizing)
	}
	if s := obs.Snapshot; s.Pool.Anchor != "general-a" || s.Claim.Exists || s.Claim != (engine.ClaimObservation{}) {
		t.Errorf("snapshot pool %+v claim %+v", s.Pool, s.Claim)
	}
	// general-b is due, so its node is still avoided.
	if want := []string{"host-node-b"}; !reflect.DeepEqual(obs.AvoidHostnames, want) {
		t.Errorf("avoid %v, want %v", obs.AvoidHostnames, want)
	}
}

// The snapshot carries the pool's annotations raw, and the anchored
// claim's failure record with the backoff the observer computed.
func TestSnapshotRawAnnotationsAndRetryAt(t *testing.T) {
	failedAt := now.Add(-10 * time.Minute)
	np := nodePool(anchored("general-a"), poolAnnotations(
		v1alpha1.AnnotationActiveRotationState, "draining",
		v1alpha1.AnnotationFreeze, "soon",
		v1alpha1.AnnotationLastRotationAt, "2026-11-29T10:00:00Z",
		v1alpha1.AnnotationLastFailureAt, "2026-11-29T11:00:00Z",
		v1alpha1.AnnotationWindowOpenedAt, "2026-11-30T00:00:00Z",
	), func(np *karpv1.NodePool) { np.Spec.Replicas = ptr.To(int64(3)) })
	claim := nodeClaim("general-a", 40*time.Minute, "", inState(v1alpha1.StateFailed),
		claimAnnotations(v1alpha1.AnnotationFailedAt, stamp(failedAt), v1alpha1.AnnotationRetryCount, "2"))
	s := observeNow(t, np, governing(), claim).Snapshot
	wantPool := engine.PoolObservation{
		Governance: "governed", Static: true, Feasible: true, WindowOpen: true,
		Anchor: "general-a", RotationState: "draining", Freeze: "soon",
		LastRotationAt: "2026-11-29T10:00:00Z", LastFailureAt: "2026-11-29T11:00:00Z", WindowOpenedAt: "2026-11-30T00:00:00Z",
	}
	if s.Pool != wantPool {
		t.Errorf("pool\n got %+v\nwant %+v", s.Pool, wantPool)
	}
	// retry 2: 2·30m after failed-at, inside the 24/7 window.
	wantClaim := engine.ClaimObservation{Exists: true, State: "failed", FailedAt: stamp(failedAt), RetryCount: "2", RetryAt: failedAt.Add(time.Hour)}
	if !reflect.DeepEqual(s.Claim, wantClaim) {
		t.Errorf("claim\n got %+v\nwant %+v", s.Claim, wantClaim)
	}
	// A malformed failure record is carried raw, with no backoff end: the
	// retryDue fact reports it.
	claim = nodeClaim("general-a", 40*time.Minute, "", inState(v1alpha1.StateFailed), claimAnnotations(v1alpha1.AnnotationFailedAt, "x"))
	obs := observeNow(t, nodePool(anchored("general-a")), governing(), claim)
	if c := obs.Snapshot.Claim; c.FailedAt != "x" || !c.RetryAt.IsZero() || c.BackoffError != `noderotation.io/failed-at "x" is not an RFC3339 time` {
		t.Errorf("malformed: %+v", obs.Snapshot.Claim)
	}
	if want := []census.BadAnnotation{{Object: "NodeClaim/general-a", Key: v1alpha1.AnnotationFailedAt, Value: "x", Problem: "not an RFC3339 time"}}; !reflect.DeepEqual(obs.BadAnnotations, want) {
		t.Errorf("bad annotations %+v", obs.BadAnnotations)
	}
}

// The failure record is parsed once: the snapshot takes the census's
// figures of the claim it judged on the same record, and parses only what
// the census did not look at (an ungoverned pool) or judged on another copy.
func TestSnapshotBackoffFromTheCensus(t *testing.T) {
	failedAt := now.Add(-10 * time.Minute)
	claim := nodeClaim("general-a", 40*time.Minute, "", inState(v1alpha1.StateFailed),
		claimAnnotations(v1alpha1.AnnotationFailedAt, stamp(failedAt), v1alpha1.AnnotationRetryCount, "2"))
	settings, err := policy.Resolve(alwaysOpen()) // retryBackoff 30m, open around the clock
	if err != nil {
		t.Fatal(err)
	}
	obs := &Observation{Subject: claim, Settings: settings, Census: census.Result{Figures: map[string]census.Figures{
		"general-a": {Claim: claim, RetryAt: now.Add(7 * time.Minute)}}}}
	if at, bad := backoff(obs, claim); !at.Equal(now.Add(7*time.Minute)) || bad != "" {
		t.Errorf("from the census: %s %q, want the census's figure", at, bad)
	}
	other := claim.DeepCopy()
	other.Annotations[v1alpha1.AnnotationRetryCount] = "3" // the census judged another copy
	obs.Census.Figures["general-a"] = census.Figures{Claim: other, RetryAt: now.Add(7 * time.Minute)}
	if at, bad := backoff(obs, claim); !at.Equal(failedAt.Add(time.Hour)) || bad != "" {
		t.Errorf("another copy: %s %q, want parsed here (2·30m after failed-at)", at, bad)
	}
	stateOnly := claim.DeepCopy()
	stateOnly.Annotations[v1alpha1.AnnotationState] = v1alpha1.StatePending // the census judged it before the failure
	obs.Census.Figures["general-a"] = census.Figures{Claim: stateOnly, RetryAt: now.Add(7 * time.Minute)}
	if at, _ := backoff(obs, claim); !at.Equal(failedAt.Add(time.Hour)) {
		t.Errorf("another state: %s, want parsed here", at)
	}
	obs.Census = census.Result{Bad: []census.BadAnnotation{{Object: "NodeClaim/general-a", Key: v1alpha1.AnnotationRetryCount, Value: "2", Problem: "judged bad"}}}
	if _, bad := backoff(obs, claim); bad != `noderotation.io/retry-count "2" is judged bad` {
		t.Errorf("the census's verdict %q, want it carried", bad)
	}
	obs.Census.Bad[0].Value = "-1" // a verdict on another value
	if at, bad := backoff(obs, claim); bad != "" || !at.Equal(failedAt.Add(time.Hour)) {
		t.Errorf("a verdict on another value: %s %q, want parsed here", at, bad)
	}
}

func TestSnapshotDeletingClaim(t *testing.T) {
	deleted := metav1.NewTime(now.Add(-40 * time.Minute))
	claim := nodeClaim("general-a", 40*time.Minute, "", inState(v1alpha1.StateDraining), func(c *karpv1.NodeClaim) {
		c.DeletionTimestamp = &deleted
		c.Finalizers = []string{"karpenter.sh/termination"}
	})
	c := observeNow(t, nodePool(anchored("general-a")), governing(), claim).Snapshot.Claim
	if !c.Exists || !c.Deleting || !c.DeletedAt.Equal(deleted.Time) || c.State != "draining" {
		t.Errorf("claim %+v", c)
	}
}

// The candidate's kind reaches the snapshot: forcefulFallback when its
// deadline (20m) is nearer than t_rot (47m) and the policy enables it.
func TestSnapshotCandidateKind(t *testing.T) {
	spec := alwaysOpen()
	spec.Surge.ForcefulFallback.Enabled = true
	obs := observeNow(t, nodePool(), rotationPolicy("api", spec), nodeClaim("general-a", 20*time.Minute, ""))
	if obs.Snapshot.Candidate != "forcefulFallback" {
		t.Errorf("candidate %q", obs.Snapshot.Candidate)
	}
	obs = observeNow(t, nodePool(), governing(), nodeClaim("general-a", 3*time.Hour, ""))
	if obs.Snapshot.Candidate != "none" || obs.Subject != nil || obs.Snapshot.Outstanding != 0 {
		t.Errorf("no candidate: %q subject %v", obs.Snapshot.Candidate, obs.Subject)
	}
}

// Outstanding is candidates + in backoff.
func TestSnapshotOutstanding(t *testing.T) {
	obs := observeNow(t, nodePool(), governing(),
		nodeClaim("general-a", 20*time.Minute, ""),
		nodeClaim("general-b", 30*time.Minute, "", inState(v1alpha1.StateFailed), claimAnnotations(v1alpha1.AnnotationFailedAt, stamp(now))),
		nodeClaim("general-c", 3*time.Hour, ""),
	)
	if obs.Snapshot.Outstanding != 2 || obs.Census.Census.InBackoff != 1 {
		t.Errorf("outstanding %d census %+v", obs.Snapshot.Outstanding, obs.Census.Census)
	}
}

// Findings: a fatal finding makes the pool infeasible; warnings do not.
func TestObserveFindings(t *testing.T) {
	noTGP := nodePool(func(np *karpv1.NodePool) { np.Spec.Template.Spec.TerminationGracePeriod = nil })
	obs := observeNow(t, noTGP, governing())
	if len(obs.Findings) != 1 || obs.Findings[0].Reason != "TGPUnset" || !obs.Snapshot.Pool.Feasible {
		t.Errorf("findings %+v feasible %v", obs.Findings, obs.Snapshot.Pool.Feasible)
	}
	spec := alwaysOpen()
	spec.MaintenanceWindows = nil
	obs = observeNow(t, nodePool(), rotationPolicy("api", spec))
	if obs.Snapshot.Pool.Feasible || obs.WindowOpen || obs.Findings[0].Reason != "NoWindows" {
		t.Errorf("no windows: findings %+v feasible %v", obs.Findings, obs.Snapshot.Pool.Feasible)
	}
}
