package observe

import (
	"context"
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	_ "github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/internal/scheme"
	"github.com/noderotation/node-rotation-controller/internal/table"
)

// The fixture: NodePool "general" (workload=api, expireAfter 14d,
// terminationGracePeriod 30m) governed by RotationPolicy "api", open 24/7
// with the defaults (readyTimeout 15m, cooldownAfter 10m, retryBackoff 30m).
// By hand (docs/design.md#age-threshold): P = 1m, t_rot = 15m + 30m + 2m =
// 47m, Lead = 2·1m + 47m = 49m, so a claim is due once its deadline is less
// than 49m away; failurePause = max(10m, cooldownAfter) = 10m; the drain
// bound is tGP + 2m = 32m.
const (
	ns    = "nrc-system"
	poolE = 14 * 24 * time.Hour
	lead  = 49 * time.Minute
)

// now is a Monday noon in UTC.
var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var everyDay = []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func alwaysOpen() v1alpha1.RotationPolicySpec {
	return v1alpha1.RotationPolicySpec{
		NodePoolSelector:   metav1.LabelSelector{MatchLabels: map[string]string{"workload": "api"}},
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: everyDay, Start: "00:00", End: "24:00"}},
	}
}

func rotationPolicy(name string, spec v1alpha1.RotationPolicySpec) *v1alpha1.RotationPolicy {
	return &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func governing() *v1alpha1.RotationPolicy { return rotationPolicy("api", alwaysOpen()) }

func nodePool(mods ...func(*karpv1.NodePool)) *karpv1.NodePool {
	e := poolE
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general", Labels: map[string]string{"workload": "api"}, Annotations: map[string]string{}}}
	np.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 30 * time.Minute}
	for _, m := range mods {
		m(np)
	}
	return np
}

func poolAnnotations(kv ...string) func(*karpv1.NodePool) {
	return func(np *karpv1.NodePool) {
		for i := 0; i < len(kv); i += 2 {
			np.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func anchored(claim string) func(*karpv1.NodePool) {
	return poolAnnotations(v1alpha1.AnnotationActiveRotation, claim)
}

// nodeClaim is a Ready claim of the pool with the pool's expireAfter whose
// deadline is `left` away from now, on node (none when "").
func nodeClaim(name string, left time.Duration, node string, mods ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
	e := poolE
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: "general"}, Annotations: map[string]string{},
		CreationTimestamp: metav1.NewTime(now.Add(left - e)),
	}}
	c.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
	c.Status.NodeName = node
	c.Status.Conditions = []status.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
	for _, m := range mods {
		m(c)
	}
	return c
}

// fresh is a claim created at t (a surge claim, say), far from its deadline.
func fresh(name string, t time.Time, node string) *karpv1.NodeClaim {
	return nodeClaim(name, poolE-now.Sub(t), node)
}

func claimAnnotations(kv ...string) func(*karpv1.NodeClaim) {
	return func(c *karpv1.NodeClaim) {
		for i := 0; i < len(kv); i += 2 {
			c.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func inState(s string) func(*karpv1.NodeClaim) {
	return claimAnnotations(v1alpha1.AnnotationState, s)
}

func startedAt(t time.Time) func(*karpv1.NodeClaim) {
	return claimAnnotations(v1alpha1.AnnotationStartedAt, stamp(t))
}

func ofPool(p string) func(*karpv1.NodeClaim) {
	return func(c *karpv1.NodeClaim) { c.Labels[karpv1.NodePoolLabelKey] = p }
}

func node(name string, mods ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{},
		Labels: map[string]string{corev1.LabelHostname: "host-" + name, karpv1.NodePoolLabelKey: "general"}}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	for _, m := range mods {
		m(n)
	}
	return n
}

func pod(name, node, cpu string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}}
	p.Spec.NodeName = node
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
	p.Status.Phase = corev1.PodRunning
	for _, m := range mods {
		m(p)
	}
	return p
}

func daemonSetOwned(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: ptr.To(true)}}
}

// placeholderPod is the (still Pending) placeholder of claim on host.
func placeholderPod(claim, host string) *corev1.Pod {
	p := pod("nrc-surge-"+claim, host, "1")
	p.Namespace = ns
	p.Labels = map[string]string{v1alpha1.LabelSurgeFor: claim, v1alpha1.LabelNodePool: "general"}
	p.Status.Phase = corev1.PodPending
	return p
}

// workloads are the Pods on node-a: two that move (1500m), a DaemonSet Pod
// and a finished one (excluded), and a Pod on another node.
func workloads() []client.Object {
	return []client.Object{
		pod("app-1", "node-a", "500m"),
		pod("app-2", "node-a", "1"),
		pod("ds-1", "node-a", "200m", daemonSetOwned),
		pod("done-1", "node-a", "4", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
		pod("elsewhere", "node-b", "3"),
	}
}

// newClient is a fake API server holding objs, with the spec.nodeName and
// involvedObject.name indexes the observer's Pod and Event lists need.
func newClient(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Name} })
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

func observerOn(c client.Reader, at time.Time) *Observer {
	return &Observer{Cache: c, API: c, Namespace: ns, Clock: func() time.Time { return at }, Rules: shipped}
}

// shipped is the rules table the controller ships: it declares when the
// facts it computes from the clock change.
var shipped = func() *engine.Engine {
	e, err := table.Load()
	if err != nil {
		panic(err)
	}
	return e
}()

// observeAt observes pool "general" among objs at the given instant.
func observeAt(t *testing.T, at time.Time, objs ...client.Object) *Observation {
	t.Helper()
	obs, err := observerOn(newClient(t, nil, objs...), at).Observe(context.Background(), "general", NoCap)
	if err != nil {
		t.Fatal(err)
	}
	if obs == nil {
		t.Fatal("no observation")
	}
	return obs
}

func observeNow(t *testing.T, objs ...client.Object) *Observation {
	t.Helper()
	return observeAt(t, now, objs...)
}

func nameOf(c *karpv1.NodeClaim) string {
	if c == nil {
		return "<nil>"
	}
	return c.Name
}
