package rotation_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/controller"
	_ "github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/test/fakekarpenter"
	"github.com/noderotation/node-rotation-controller/test/testenv"
)

const (
	controllerNS  = "node-rotation-system"
	priorityClass = "node-rotation-placeholder"
	workloadNS    = "workloads"
)

var (
	env       *testenv.Env
	karpenter *fakekarpenter.Karpenter
	watcher   client.WithWatch
	stop      context.CancelFunc
	// coverage records which pools (one per spec) took which transition.
	coverage = newCoverage()
	// skew is added to the controllers' clock; a spec that advances it
	// restores it when it ends.
	skew atomic.Int64
)

// instances is how many controllers run against the same API server with
// leader election off: every spec is also a race between them (§5.2
// "Idempotent recovery"): never two anchors, every announcement once.
const instances = 2

func clock() time.Time { return time.Now().Add(time.Duration(skew.Load())) }

// advanceClock moves the controllers' clock forward.
func advanceClock(d time.Duration) { skew.Add(int64(d)) }

func TestRotation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "rotation controller on a real API server")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = testenv.Start("config/crd")
	Expect(err).NotTo(HaveOccurred())
	watcher, err = client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	for _, ns := range []string{controllerNS, workloadNS} {
		Expect(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	Expect(env.Client.Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: priorityClass}, Value: -10, PreemptionPolicy: ptr.To(corev1.PreemptNever),
	})).To(Succeed())
	karpenter = &fakekarpenter.Karpenter{Client: env.Client}

	log := zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true))
	ctrl.SetLogger(log)
	var mctx context.Context
	mctx, stop = context.WithCancel(context.Background())
	for i := 0; i < instances; i++ {
		name := fmt.Sprintf("instance-%d", i)
		metricsAddr := "0"
		if i == 0 {
			metricsAddr = metricsListen // one process, one registry: one endpoint serves both instances' metrics
		}
		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
			Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: metricsAddr}, HealthProbeBindAddress: "0",
			Cache: controller.CacheOptions(controllerNS),
		})
		Expect(err).NotTo(HaveOccurred())
		r, err := controller.Setup(mgr, controller.Config{
			Namespace: controllerNS, PlaceholderPriorityClass: priorityClass, Name: name, Clock: clock,
		}, log.WithName(name))
		Expect(err).NotTo(HaveOccurred())
		swept := &sweptBy[i]
		r.OnDecision = func(pool string, d engine.Decision) {
			coverage.record(pool, d)
			if pool == warmupPool {
				swept.Store(true) // the sweep runs before a reconciler's first decision
			}
		}
		go func() {
			defer GinkgoRecover()
			Expect(mgr.Start(mctx)).To(Succeed())
		}()
	}
	warmup()
})

// warmupPool is reconciled by every instance before any spec runs, so each
// startup sweep is over before a spec's objects exist.
const warmupPool = "warmup"

var sweptBy [instances]atomic.Bool

// warmup waits until every instance has made its first decision.
func warmup() {
	Expect(env.Client.Create(ctx, &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: warmupPool},
		Spec: karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}},
		}}},
	})).To(Succeed())
	Eventually(func() bool {
		for i := range sweptBy {
			if !sweptBy[i].Load() {
				return false
			}
		}
		return true
	}, timeout).Should(BeTrue())
}

var _ = AfterSuite(func() {
	if stop != nil {
		stop()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed()) // first: a failing check below must not leave etcd and kube-apiserver running
	}
	if suite, _ := GinkgoConfiguration(); len(suite.FocusStrings) == 0 && len(suite.SkipStrings) == 0 && suite.LabelFilter == "" {
		coverage.check() // only a full run can claim full coverage
	}
})
