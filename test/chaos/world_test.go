//go:build e2e

package chaos_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/apiproxy"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/invariants"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

const (
	// Each node (4 CPUs, 3.9 allocatable) holds one 3-CPU Pod of the
	// Deployment, so the world has exactly one node per Pod however
	// Karpenter's batches fall, no node has room for a placeholder (3 CPUs,
	// the old node's Pod): every surge is a node provisioned for it.
	nodeCPU = 4
	podCPU  = 3
	// Paused is an age no node of the suites reaches: no rotation starts,
	// one in flight finishes.
	paused = "720h"
	// running makes every node older than this a candidate: a rotation
	// starts at once and the next right after it.
	running = "10s"
)

// world is one suite's NodePool, the Deployment on it behind a PDB of
// maxUnavailable 1, and the RotationPolicy governing it (a window open
// all week), watched by a recorder from before anything was created.
type world struct {
	pool, ns string
	nodes    int
	// n is the policy's maxUnavailable: how many rotations run at once
	// (docs/design.md#throughput); the checker holds the pool to it.
	n   int
	app map[string]string
	rec *recorder.Recorder
	ctl *controller
}

func (w *world) replicas() int { return w.nodes }

// newWorld builds the world — a Deployment of one Pod per node — and
// waits until the Deployment runs, with rotations paused and n rotations
// at once allowed. Its cleanup removes everything.
func newWorld(ctx context.Context, pool string, nodes, n int) *world {
	w := &world{pool: pool, ns: pool, nodes: nodes, n: n, app: map[string]string{"app": "web"}}
	var err error
	w.rec, err = recorder.Start(watcher)
	Expect(err).NotTo(HaveOccurred())
	// a previous run's namespace may still be terminating
	Eventually(func() error { return kube.Get(ctx, client.ObjectKey{Name: w.ns}, &corev1.Namespace{}) }).
		WithContext(ctx).WithTimeout(3*time.Minute).Should(Satisfy(notFound), "namespace %s of an earlier run gone", w.ns)
	Expect(kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}})).To(Succeed())
	Expect(kube.Create(ctx, w.nodePool())).To(Succeed())
	Expect(kube.Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: w.ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: w.app}},
	})).To(Succeed())
	Expect(kube.Create(ctx, w.deployment())).To(Succeed())
	Expect(kube.Create(ctx, w.policy())).To(Succeed())
	DeferCleanup(func() {
		ctx := background()
		w.rec.Stop()
		_ = kube.Delete(ctx, &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: w.pool}})
		_ = kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}})
		_ = kube.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: w.pool}})
		// a rotation cut short by a failed spec leaves its placeholder:
		// the next suite's startup sweep need not clean up after this one
		_ = kube.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(fixtures.ControllerNamespace), client.MatchingLabels{v1alpha1.LabelNodePool: w.pool})
		Eventually(func() []karpv1.NodeClaim { return w.claims(ctx) }).WithTimeout(3*time.Minute).Should(BeEmpty(), "the pool's NodeClaims removed")
		Eventually(func() error { return kube.Get(ctx, client.ObjectKey{Name: w.ns}, &corev1.Namespace{}) }).
			WithTimeout(3*time.Minute).Should(Satisfy(notFound), "namespace %s removed", w.ns)
	})
	start := time.Now()
	Eventually(func() int { return w.healthy(ctx) }).WithTimeout(4*time.Minute).WithPolling(time.Second).Should(Equal(w.replicas()),
		"%d Pods of the Deployment Ready", w.replicas())
	Eventually(func() int { return len(w.claims(ctx)) }).WithTimeout(time.Minute).Should(Equal(nodes), "one node per Pod")
	GinkgoWriter.Printf("world %s: %d Pods on %d nodes after %s\n", pool, w.replicas(), w.nodes, time.Since(start).Round(time.Second))
	return w
}

// nodePool is the rotation pool of the e2e matrix (test/fixtures) with
// nodes of nodeCPU cores and room for every node and a surge node.
func (w *world) nodePool() *karpv1.NodePool {
	np := fixtures.RotationPool(w.pool)
	np.Spec.Template.Spec.Requirements[3].Values = []string{fmt.Sprint(nodeCPU)}
	np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: w.roomy()}
	if w.n > 1 {
		// the pool's own budget lets its n rotations be disrupted at once
		// (Karpenter's default 10% of a few nodes is 1;
		// docs/design.md#disruption-budget)
		np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: fmt.Sprint(w.n)}}
	}
	return np
}

// roomy is a limit with room for every node and a surge node.
func (w *world) roomy() resource.Quantity { return resource.MustParse("64") }

// tight is a limit that leaves the placeholder room by the controller's
// headroom check, but no room for a 4-CPU node: Karpenter cannot provision
// the surge, so the attempt times out and is rolled back. It is counted
// from the pool's status.resources, not from the instance size: in this
// world Karpenter's kwok provider gives a NodeClaim (and its Node) the
// capacity its Pods requested, and both the controller's headroom and
// Karpenter's limit check subtract that.
func (w *world) tight(ctx context.Context) resource.Quantity {
	// Every node was provisioned for one 3-CPU Pod or placeholder; the
	// status catches up with a new pool a few seconds late.
	want := *resource.NewQuantity(int64(w.nodes*podCPU), resource.DecimalSI)
	Eventually(func() int64 {
		used := w.nodePoolNow(ctx).Status.Resources[corev1.ResourceCPU]
		return used.MilliValue()
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(want.MilliValue()), "the pool's status.resources counts its nodes")
	limit := want.DeepCopy()
	limit.Add(*resource.NewQuantity(podCPU, resource.DecimalSI))
	return limit
}

// deployment is one podCPU-core Pod per node. A rollout (needPullSecrets)
// replaces one Pod at a time in its node's room: a surge Pod would not fit
// and Karpenter would provision a node no rotation asked for.
func (w *world) deployment() *appsv1.Deployment {
	d := fixtures.Workload(w.ns, "web", w.pool, int32(w.replicas()), fmt.Sprint(podCPU), w.app)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(0)), MaxUnavailable: ptr.To(intstr.FromInt32(1))}}
	return d
}

// needPullSecrets gives the Deployment's Pods an imagePullSecret (kwok
// pulls nothing, so the Secret's content is never read) and waits until
// every Pod has it: with usePullSecrets their image is pre-pulled by a Pod
// in this namespace (docs/design.md#pre-pull-secrets).
func (w *world) needPullSecrets(ctx context.Context) {
	const secret = "chaos-registry"
	since := revision(ctx)
	Expect(kube.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: w.ns},
		Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{}}`)}})).To(Succeed())
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "web"}, d); err != nil {
			return err
		}
		d.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: secret}}
		return kube.Update(ctx, d)
	})).To(Succeed())
	Eventually(func() string {
		pods := &corev1.PodList{}
		Expect(kube.List(ctx, pods, client.InNamespace(w.ns), client.MatchingLabels(w.app))).To(Succeed())
		for _, p := range pods.Items {
			if len(p.Spec.ImagePullSecrets) == 0 {
				return "Pod " + p.Name + " without the secret"
			}
		}
		if h := w.healthy(ctx); h != w.replicas() || len(pods.Items) != w.replicas() {
			return fmt.Sprintf("%d Pods, %d of %d healthy", len(pods.Items), h, w.replicas())
		}
		return ""
	}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(BeEmpty(), "the rollout with the pull secret")
	// a new Pod seen Pending before its predecessor was gone could have
	// made Karpenter provision a node: the whole campaign's check would
	// count it against the rotations
	Consistently(func() int { return invariants.Created(w.rec, []string{w.pool}, since) }).WithContext(ctx).
		WithTimeout(5*time.Second).Should(BeZero(), "the rollout provisioned no node")
}

// policy governs the pool with rotations paused; each iteration resumes
// them. No cooldown and no failure pause: each iteration starts its
// rotation at once. A failed claim waits retryBackoff, then is a candidate
// again (the retry path).
func (w *world) policy() *v1alpha1.RotationPolicy {
	p := fixtures.Policy(w.pool, paused)
	p.Spec.Surge = v1alpha1.SurgeSpec{ReadyTimeout: "3m", CooldownAfter: "0s", FailurePause: "0s", RetryBackoff: "20s"}
	if w.n > 1 {
		p.Spec.Surge.MaxUnavailable = ptr.To(intstr.FromInt(w.n))
		// several failed claims must all come back as candidates within an
		// iteration, their backoffs escalating with every rollback
		p.Spec.Surge.RetryBackoff = "1s"
	}
	return p
}

// editPolicy changes the policy through the admin's client (never the proxy).
func (w *world) editPolicy(ctx context.Context, edit func(*v1alpha1.RotationPolicy)) {
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &v1alpha1.RotationPolicy{}
		if err := kube.Get(ctx, client.ObjectKey{Name: w.pool}, p); err != nil {
			return err
		}
		edit(p)
		return kube.Update(ctx, p)
	})).To(Succeed())
}

func (w *world) resume(ctx context.Context) {
	w.editPolicy(ctx, func(p *v1alpha1.RotationPolicy) { p.Spec.AgeThreshold = running })
}

func (w *world) pause(ctx context.Context) {
	w.editPolicy(ctx, func(p *v1alpha1.RotationPolicy) { p.Spec.AgeThreshold = paused })
}

func (w *world) setLimit(ctx context.Context, cpu resource.Quantity) {
	w.setLimits(ctx, karpv1.Limits{corev1.ResourceCPU: cpu})
}

// starve leaves the pool's CPU limit roomy, so the controller's headroom
// check (CPU requests) passes for every placeholder, but sets a memory
// limit below any node's: Karpenter launches nothing, and every attempt
// times out and is rolled back (as the e2e rollback scenario does).
func (w *world) starve(ctx context.Context) {
	w.setLimits(ctx, karpv1.Limits{corev1.ResourceCPU: w.roomy(), corev1.ResourceMemory: resource.MustParse("1Mi")})
}

func (w *world) setLimits(ctx context.Context, limits karpv1.Limits) {
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		np := &karpv1.NodePool{}
		if err := kube.Get(ctx, client.ObjectKey{Name: w.pool}, np); err != nil {
			return err
		}
		np.Spec.Limits = limits
		return kube.Update(ctx, np)
	})).To(Succeed())
}

func (w *world) nodePoolNow(ctx context.Context) *karpv1.NodePool {
	np := &karpv1.NodePool{}
	Expect(kube.Get(ctx, client.ObjectKey{Name: w.pool}, np)).To(Succeed())
	return np
}

// anchor is the claim of the pool's first anchored slot, "" when none is.
func (w *world) anchor(ctx context.Context) string {
	if a := w.anchors(ctx); len(a) > 0 {
		return a[0]
	}
	return ""
}

// anchors are the claims of every anchored slot, in slot order.
func (w *world) anchors(ctx context.Context) []string {
	var out []string
	for _, a := range v1alpha1.Anchors(w.nodePoolNow(ctx).Annotations) {
		out = append(out, a.Claim)
	}
	return out
}

func (w *world) claims(ctx context.Context) []karpv1.NodeClaim {
	list := &karpv1.NodeClaimList{}
	Expect(kube.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: w.pool})).To(Succeed())
	return list.Items
}

func (w *world) claimNames(ctx context.Context) []string {
	var out []string
	for _, c := range w.claims(ctx) {
		out = append(out, c.Name)
	}
	sort.Strings(out)
	return out
}

// healthy counts the Deployment's Pods the PDB counts: Ready, not terminating.
func (w *world) healthy(ctx context.Context) int {
	n, err := fixtures.HealthyPods(ctx, kube, w.ns, w.app)
	Expect(err).NotTo(HaveOccurred())
	return n
}

// revision is the cluster's current resourceVersion: every write from now
// on has a larger one.
func revision(ctx context.Context) int64 {
	list := &karpv1.NodePoolList{}
	Expect(kube.List(ctx, list)).To(Succeed())
	var rv int64
	_, err := fmt.Sscan(list.ResourceVersion, &rv)
	Expect(err).NotTo(HaveOccurred())
	return rv
}

// quiet describes what still moves in the world, or "" once nothing does:
// no rotation anchored, no placeholder, no claim of the pool deleting,
// every Pod of the Deployment healthy.
func (w *world) quiet(ctx context.Context) string {
	if a := w.anchors(ctx); len(a) > 0 {
		return fmt.Sprintf("rotation of %v anchored", a)
	}
	pods := &corev1.PodList{}
	Expect(kube.List(ctx, pods, client.InNamespace(fixtures.ControllerNamespace), client.MatchingLabels{v1alpha1.LabelNodePool: w.pool})).To(Succeed())
	if len(pods.Items) > 0 {
		return "placeholder " + pods.Items[0].Name + " exists"
	}
	for _, c := range w.claims(ctx) {
		if c.DeletionTimestamp != nil {
			return "NodeClaim " + c.Name + " deleting"
		}
	}
	// A pre-pull Pod in the workload's namespace being deleted is on its
	// way; one that is not is the checker's to report (prepull-left).
	Expect(kube.List(ctx, pods, client.InNamespace(w.ns), client.HasLabels{v1alpha1.LabelPrePullFor})).To(Succeed())
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			return "pre-pull Pod " + p.Name + " deleting"
		}
	}
	if h := w.healthy(ctx); h != w.replicas() {
		return fmt.Sprintf("%d of %d Pods healthy", h, w.replicas())
	}
	return ""
}

// quiesce waits, with a generous bound, until nothing moves; the controller
// must stay up meanwhile.
func (w *world) quiesce(ctx context.Context, bound time.Duration) {
	Eventually(func() string {
		w.ctl.alive()
		return w.quiet(ctx)
	}).WithContext(ctx).WithTimeout(bound).WithPolling(500*time.Millisecond).Should(BeEmpty(), "the world quiesces")
}

// campaign accumulates what a suite's iterations did, for its summary line.
type campaign struct {
	kills, rotations, violations, lost, iterations int
}

// check runs the invariant checker over the run since sinceRV, prints its
// report and, when it found violations, the timeline and log tail.
func (w *world) check(ctx context.Context, label string, sinceRV int64, originals []string, seq0 int) *invariants.Report {
	in := w.input(sinceRV, originals, seq0)
	var r *invariants.Report
	Eventually(func() error {
		var err error
		r, err = invariants.Check(ctx, in)
		return err
	}).WithContext(ctx).WithTimeout(time.Minute).Should(Succeed())
	GinkgoWriter.Printf("%s: attempts=%d created=%d %s\n", label, in.Attempts, in.Created, r.Summary())
	if len(r.Violations) > 0 {
		GinkgoWriter.Printf("%s\n%s\n%s", r, w.explain(sinceRV, seq0), w.ctl.tail(6000))
	}
	return r
}

// input is the checker's view of the run since sinceRV (the cluster) and
// seq0 (the proxy's record).
func (w *world) input(sinceRV int64, originals []string, seq0 int) invariants.Input {
	ends, failures := 0, 0
	for _, wr := range proxy.Writes(seq0) {
		switch {
		case !wr.Interrupted():
		case endsRotation(wr):
			ends++
		case failsAttempt(wr):
			failures++
		}
	}
	return invariants.Input{
		Client: kube, Pools: []string{w.pool}, Namespace: fixtures.ControllerNamespace, Originals: originals,
		Attempts: invariants.Attempts(w.rec, []string{w.pool}, sinceRV), Created: invariants.Created(w.rec, []string{w.pool}, sinceRV),
		Logs: w.ctl.logs(), InterruptedEnds: ends, InterruptedFailures: failures, Records: w.rec, SinceRV: sinceRV,
		Workloads: []invariants.Workload{{Namespace: w.ns, Selector: w.app, MinHealthy: w.replicas() - 1, MaxPending: maxPending}},
		MaxAtOnce: max(w.n, 1),
	}
}

// diagnose prints what a failed spec needs to be understood from CI output
// alone: the proxy's record and the timeline since the suite began, what
// the invariant checker finds in the world as it was left, and the tail of
// the controller's last two runs.
func (w *world) diagnose(sinceRV int64, seq0 int) {
	GinkgoWriter.Printf("%s", w.explain(sinceRV, seq0))
	ctx, cancel := context.WithTimeout(background(), 30*time.Second)
	defer cancel()
	if r, err := invariants.Check(ctx, w.input(sinceRV, nil, seq0)); err != nil {
		GinkgoWriter.Printf("--- invariant checker: cannot read the cluster: %v ---\n", err)
	} else {
		GinkgoWriter.Printf("--- invariant checker on the world as the failure left it ---\n%s\n", r)
	}
	GinkgoWriter.Printf("%s", w.ctl.tail(8000))
}

// maxPending bounds a workload Pod's wait: a drained Pod lands on the
// surge node that was reserved for it, so it runs within seconds; one that
// waits for a node to be provisioned and boot (about 15 s here) was not
// given make-before-break. Generous for a loaded machine.
const maxPending = 45 * time.Second

// endsRotation: a write that ends a rotation in any slot — the anchor
// released, or the expiry recorded — after which the completion line is
// announced.
func endsRotation(wr apiproxy.Write) bool {
	if wr.Resource != "nodepools" || wr.Verb != "PATCH" {
		return false
	}
	for _, k := range wr.Keys {
		key, value, _ := strings.Cut(k[1:], "=")
		_, base, ok := v1alpha1.SlotOf(key)
		switch {
		case !ok:
		case k[0] == '-' && base == v1alpha1.AnnotationActiveRotation,
			k[0] == '+' && base == v1alpha1.AnnotationActiveRotationState && value == v1alpha1.StateExpired:
			return true
		}
	}
	return false
}

// failsAttempt: a write that moves a claim to failed, after which the
// failure is announced.
func failsAttempt(wr apiproxy.Write) bool {
	return wr.Resource == "nodeclaims" && wr.Verb == "PATCH" && slices.Contains(wr.Keys, "+"+v1alpha1.AnnotationState+"="+v1alpha1.StateFailed)
}

// explain is what a failure needs to be understood from CI output alone:
// the controller's writes as the proxy saw them, and the timeline of the
// rotation's objects as the watch saw them.
func (w *world) explain(sinceRV int64, seq0 int) string {
	var b strings.Builder
	b.WriteString("--- the controller's writes (proxy record) ---\n")
	for _, wr := range proxy.Writes(seq0) {
		if !wr.Background {
			fmt.Fprintf(&b, "%s %s\n", wr.Time.Format("15:04:05.000"), wr)
		}
	}
	b.WriteString("--- timeline of the pool's objects (watch record, resourceVersion order) ---\n")
	b.WriteString(w.timeline(sinceRV))
	return b.String()
}

// timeline is the pool's objects since sinceRV as the watch saw them.
func (w *world) timeline(sinceRV int64) string {
	return w.rec.Timeline(sinceRV, w.pool, fixtures.ControllerNamespace)
}

// notFound: only NotFound means gone; another error says nothing.
func notFound(err error) bool { return apierrors.IsNotFound(err) }
