package rotation_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/cache"
	"github.com/noderotation/node-rotation-controller/internal/controller"
	"github.com/noderotation/node-rotation-controller/test/fakekarpenter"
	"github.com/noderotation/node-rotation-controller/test/testenv"
)

// A world is one API server with the controller instances that act on it.
// The suite's main world runs two instances with leader election off, so
// every spec is also a race between them; the leader-election world
// (started only by the specs that need it) runs two with leader election
// on, as the chart deploys them.
type world struct {
	name      string
	env       *testenv.Env
	karpenter *fakekarpenter.Karpenter
	watcher   client.WithWatch
	acting    int
	anchors   *anchorWatch
	instances *instanceSet
}

// startWorld starts an API server, the namespaces and the PriorityClass the
// controller needs, an anchor watch, and two controller instances; it
// returns once every acting instance has run its startup sweep.
func startWorld(name string, leaderElection bool) *world {
	return startWorldOf(name, leaderElection, instances)
}

// startWorldOf is startWorld with n instances; with none, the world's
// objects can be laid out before any controller runs (the startup sweep).
func startWorldOf(name string, leaderElection bool, n int) *world {
	e, err := testenv.Start("config/crd")
	Expect(err).NotTo(HaveOccurred())
	w := &world{name: name, env: e, karpenter: &fakekarpenter.Karpenter{Client: e.Client}, acting: instances}
	started := false
	defer func() { // a failure below must not leave etcd and kube-apiserver running
		if !started {
			if w.instances != nil {
				w.instances.stop()
			}
			if w.anchors != nil {
				w.anchors.stop()
			}
			_ = e.Stop()
		}
	}()
	if leaderElection {
		w.acting = 1
	}
	w.watcher, err = client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	Expect(err).NotTo(HaveOccurred())
	for _, ns := range []string{controllerNS, workloadNS} {
		Expect(e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	Expect(e.Client.Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: priorityClass}, Value: -10, PreemptionPolicy: ptr.To(corev1.PreemptNever),
	})).To(Succeed())
	w.anchors, err = watchAnchors(w.watcher)
	Expect(err).NotTo(HaveOccurred())
	metricsAddr := ""
	if name == "main" {
		metricsAddr = metricsListen // one process, one registry: one endpoint serves every instance's metrics
	}
	if n > 0 {
		w.instances = startInstances(e, name, n, leaderElection, metricsAddr)
		w.warmup()
	} else {
		w.createWarmupPool() // what every world has; its instances come later
	}
	started = true
	return w
}

// The level-triggered Warnings fire once per controller process; with
// leader election on (the chart's default) only the leader acts, so they
// fire once (docs/operations.md). These specs run the main world's "once
// per instance" refusals in a world of two instances with leader election
// on, and assert exactly one Warning in total.
var _ = Describe("with leader election on, as the chart runs two replicas", Ordered, func() {
	BeforeAll(func() {
		le := startWorld("leader-election", true)
		le.use()
		DeferCleanup(func() {
			mainWorld.use()
			le.stop()
		})
	})

	It("refuses to rotate a pool two policies tie for, and says so once", func() { tieSpec("le-tie") })

	It("warns once and never starts on a static NodePool", func() { staticSpec("le-static") })

	It("does not start without spec.limits headroom for the placeholder, and warns once", func() { headroomSpec("le-headroom") })
})

// use makes w the current world of the helpers.
func (w *world) use() {
	env, karpenter, watcher, acting, anchors = w.env, w.karpenter, w.watcher, w.acting, w.anchors
}

// stop stops the instances, then the API server.
func (w *world) stop() {
	if w.instances != nil {
		w.instances.stop()
	}
	w.anchors.stop()
	Expect(w.env.Stop()).To(Succeed())
}

// warmupPool is reconciled by every instance before any spec runs, so each
// startup sweep is over before a spec's objects exist.
const warmupPool = "warmup"

// warmup waits until every acting instance has made its first decision
// (the sweep runs before a reconciler's first decision).
func (w *world) warmup() {
	w.createWarmupPool()
	Eventually(w.instances.deciding, timeout).Should(BeNumerically(">=", w.acting))
}

func (w *world) createWarmupPool() {
	Expect(w.env.Client.Create(ctx, &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: warmupPool},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}},
		}}},
	})).To(Succeed())
}

// instanceSet is controller instances started together.
type instanceSet struct {
	names []string
	// caps are the instances' cluster caps (-max-concurrent-rotations),
	// none by default; a spec sets and restores them.
	caps   []*controller.ClusterCap
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// pullSecretsWorld: startInstances runs the controllers as the chart does
// with prePull.usePullSecrets (-prepull-use-pull-secrets: their Pods
// cached in every namespace); true only while that world starts
// (prepull_test.go), so every other world runs the default.
var pullSecretsWorld bool

// instanceSeq keeps controller names unique in the process (controller-
// runtime refuses a name twice).
var instanceSeq atomic.Int64

// startInstances starts n managers against e, each with the controller as
// controller.Setup wires it (sweep, announcer, clock), recording every
// decision in coverage under the instance's name.
func startInstances(e *testenv.Env, prefix string, n int, leaderElection bool, metricsAddr string) *instanceSet {
	mctx, cancel := context.WithCancel(context.Background())
	set := &instanceSet{cancel: cancel}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", prefix, instanceSeq.Add(1))
		addr := "0"
		if i == 0 && metricsAddr != "" {
			addr = metricsAddr
		}
		cfg := rest.CopyConfig(e.Config)
		cfg.Wrap(controllerRequests.wrap(name))
		cacheOpts := cache.Options(controllerNS, pullSecretsWorld)
		opts := ctrl.Options{
			Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: addr}, HealthProbeBindAddress: "0",
			Cache: cacheOpts,
			// as cmd/node-rotation-controller sets it up: an Event budget per reason
			EventBroadcaster: controller.EventBroadcaster(), //nolint:staticcheck
		}
		if leaderElection { // as cmd/node-rotation-controller sets it up
			opts.LeaderElection = true
			opts.LeaderElectionID = "node-rotation-controller"
			opts.LeaderElectionNamespace = controllerNS
			opts.LeaderElectionReleaseOnCancel = true
		}
		mgr, err := ctrl.NewManager(cfg, opts)
		Expect(err).NotTo(HaveOccurred())
		r, err := controller.Setup(mgr, controller.Config{
			Namespace: controllerNS, PlaceholderPriorityClass: priorityClass, Name: name, Clock: clock, PrePullImage: prePullImage, PrePullUsePullSecrets: pullSecretsWorld,
			Workers: 4, // pools side by side, as the binary runs them (-workers)
		}, log.WithName(name))
		Expect(err).NotTo(HaveOccurred())
		r.OnDecision = func(pool string, d engine.Decision) { coverage.record(name, pool, d) }
		set.names = append(set.names, name)
		set.caps = append(set.caps, r.Cap)
		set.done.Add(1)
		go func() {
			defer GinkgoRecover()
			defer set.done.Done()
			Expect(mgr.Start(mctx)).To(Succeed())
		}()
	}
	return set
}

// deciding is how many of the set's instances have made a decision.
func (s *instanceSet) deciding() int {
	n := 0
	for _, name := range s.names {
		if coverage.decisions(name) > 0 {
			n++
		}
	}
	return n
}

func (s *instanceSet) stop() {
	s.cancel()
	stopped := make(chan struct{})
	go func() { s.done.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(slowStop):
		// A manager that has not stopped by now will most likely fail its
		// 30 s grace period; what its goroutines are blocked in is the only
		// clue such a rare failure leaves, so print it before waiting on.
		buf := make([]byte, 8<<20)
		n := runtime.Stack(buf, true)
		GinkgoWriter.Printf("instances %v still stopping after %s; every goroutine:\n%s\n", s.names, slowStop, buf[:n])
		<-stopped
	}
}

// slowStop is how long an instance set may take to stop before its
// goroutines are dumped (a clean stop takes well under a second).
const slowStop = 10 * time.Second

// deleteAll deletes what the spec left in the current world — policies,
// NodePools (but the warm-up pool), NodeClaims, Nodes and the Pods of the
// controller's and the workloads' namespaces — and returns the names of the
// pools it deleted. Pools go first, so no pass acts on what follows (a
// policy deleted first would make its pool ungoverned: a last pass would
// roll back its rotation).
func deleteAll() []string {
	pools := &karpv1.NodePoolList{}
	Expect(env.Client.List(ctx, pools)).To(Succeed())
	var names []string
	for i := range pools.Items {
		if pools.Items[i].Name == warmupPool {
			continue
		}
		names = append(names, pools.Items[i].Name)
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &pools.Items[i]))).To(Succeed())
	}
	Eventually(poolsLeft, timeout).Should(BeEmpty(), "only the warm-up pool (if the world has one) is left")
	policies := &v1alpha1.RotationPolicyList{}
	Expect(env.Client.List(ctx, policies)).To(Succeed())
	for i := range policies.Items {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &policies.Items[i]))).To(Succeed())
	}

	// A pass that observed a pool before its deletion may still create a
	// placeholder, cordon or mark a node: every poll deletes what is left,
	// so what such a pass leaves goes too (a single sweep raced it).
	Eventually(sweepLeft, timeout).Should(BeZero(), "the spec's claims, nodes and Pods are gone")
	return names
}

// sweepLeft deletes the NodeClaims, Nodes and the Pods of the
// controller's and the workloads' namespaces it finds, and returns how many
// it found.
func sweepLeft() int {
	var found []client.Object
	claims, nodes := &karpv1.NodeClaimList{}, &corev1.NodeList{}
	Expect(env.Client.List(ctx, claims)).To(Succeed())
	Expect(env.Client.List(ctx, nodes)).To(Succeed())
	for i := range claims.Items {
		found = append(found, &claims.Items[i])
	}
	for i := range nodes.Items {
		found = append(found, &nodes.Items[i])
	}
	for _, ns := range []string{controllerNS, workloadNS} {
		pods := &corev1.PodList{}
		Expect(env.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		for i := range pods.Items {
			found = append(found, &pods.Items[i])
		}
	}
	for _, o := range found {
		release(o)
	}
	return len(found)
}

// release drops an object's finalizers and deletes it at once.
func release(o client.Object) {
	if len(o.GetFinalizers()) > 0 {
		orig := o.DeepCopyObject().(client.Object)
		o.SetFinalizers(nil)
		Expect(client.IgnoreNotFound(env.Client.Patch(ctx, o, client.MergeFrom(orig)))).To(Succeed())
	}
	Expect(client.IgnoreNotFound(env.Client.Delete(ctx, o, client.GracePeriodSeconds(0)))).To(Succeed())
}

// poolsLeft names the NodePools other than the warm-up pool.
func poolsLeft() []string {
	l := &karpv1.NodePoolList{}
	Expect(env.Client.List(ctx, l)).To(Succeed())
	var left []string
	for _, p := range l.Items {
		if p.Name != warmupPool {
			left = append(left, p.Name)
		}
	}
	return left
}
