package rotation_test

import (
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	_ "github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/test/fakekarpenter"
	"github.com/noderotation/node-rotation-controller/test/testenv"
)

const (
	controllerNS  = "node-rotation-system"
	priorityClass = "node-rotation-placeholder"
	workloadNS    = "workloads"
)

// The current world's objects: every helper reads these. A Describe that
// runs in another world (see world_test.go) swaps them for its specs.
var (
	env       *testenv.Env
	karpenter *fakekarpenter.Karpenter
	watcher   client.WithWatch
	// acting is how many of the current world's instances act on a pool:
	// all of them with leader election off, the leader with it on.
	acting int
	// anchors watches the current world's NodePools (item: the anchor never
	// moves from one claim to another, checked after every spec).
	anchors *anchorWatch
	// eventRecorder writes Events to the current world's API server as the
	// controller's own recorder does.
	eventRecorder record.EventRecorder
	// mainWorld is the suite's world: two instances, leader election off.
	mainWorld *world
	// coverage records which pools (one per spec) took which transition,
	// and which transitions a spec asserted the effect of.
	coverage = newCoverage()
	// skew is added to the controllers' clock; a spec that advances it
	// restores it when it ends.
	skew atomic.Int64
	log  = zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true))
)

// instances is how many controllers run against the same API server with
// leader election off: every spec is also a race between them
// (docs/design.md#anchor-protocol): never two anchors, every announcement
// once.
const instances = 2

func clock() time.Time { return time.Now().Add(time.Duration(skew.Load())) }

// advanceClock moves the controllers' clock forward.
func advanceClock(d time.Duration) { skew.Add(int64(d)) }

func TestRotation(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "rotation controller on a real API server")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(log)
	mainWorld = startWorld("main", false)
	mainWorld.use()
})

// Every spec ends by deleting its pools, policies, claims, nodes and Pods,
// after checking that no anchor of its pools moved from one claim to
// another: the next spec starts from an empty cluster (but the warm-up
// pool), and no spec's leftover pool can take a transition in another
// spec — e.g. under the clock skew of the stuck-drain spec.
var _ = AfterEach(func() {
	pools := deleteAll()
	anchors.expectNoMoves(pools)
})

var _ = AfterSuite(func() {
	if mainWorld != nil {
		mainWorld.stop() // first: a failing check below must not leave etcd and kube-apiserver running
	}
	if suite, _ := GinkgoConfiguration(); len(suite.FocusStrings) == 0 && len(suite.SkipStrings) == 0 && suite.LabelFilter == "" {
		coverage.check() // only a full run can claim full coverage
	}
})
