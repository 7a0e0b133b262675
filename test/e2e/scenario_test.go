//go:build e2e

package e2e_test

import (
	"context"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/invariants"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// scenario is one e2e case's world: a namespace, NodePool and
// RotationPolicy all named name, a Deployment of replicas 1.5-core Pods
// under a PDB, and the watch record of everything that happened.
type scenario struct {
	name      string
	app       map[string]string
	replicas  int32
	pool      *karpv1.NodePool
	pdb       int32 // the PDB's maxUnavailable
	rec       *recorder.Recorder
	sinceRV   int64 // the record's last resourceVersion once the workload ran
	originals []string
	// workload, when set, changes the Deployment before it is created.
	workload func(*appsv1.Deployment)
}

func newScenario(name string, pool *karpv1.NodePool, replicas, pdbMaxUnavailable int32) *scenario {
	return &scenario{name: name, app: map[string]string{"app": name}, replicas: replicas, pool: pool, pdb: pdbMaxUnavailable}
}

// setUp creates the workload, waits until every replica is Ready and
// records the pool's claims as the originals; teardown deletes it all and
// waits for the pool's nodes to go.
func (s *scenario) setUp(ctx context.Context) {
	Expect(fixtures.RequireBootDelay(8000)).To(Succeed())
	var err error
	s.rec, err = recorder.Start(watcher)
	Expect(err).NotTo(HaveOccurred())
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.name}}
	Expect(kube.Create(ctx, ns)).To(Succeed())
	Expect(kube.Create(ctx, s.pool)).To(Succeed())
	Expect(kube.Create(ctx, fixtures.PDB(s.name, "web", s.pdb, s.app))).To(Succeed())
	web := fixtures.Workload(s.name, "web", s.name, s.replicas, "1500m", s.app)
	if s.workload != nil {
		s.workload(web)
	}
	Expect(kube.Create(ctx, web)).To(Succeed())
	DeferCleanup(func() {
		s.rec.Stop()
		_ = kube.Delete(ctx, &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: s.name}})
		_ = kube.Delete(ctx, ns)
		_ = kube.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: s.name}})
		Eventually(func() []karpv1.NodeClaim { return claimsOf(ctx, s.name) }).WithTimeout(4 * time.Minute).Should(BeEmpty())
	})
	// Registered last, so it runs first: the record before the teardown.
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Printf("--- timeline of %s's objects since the workload ran (watch record, resourceVersion order) ---\n%s",
				s.name, s.rec.Timeline(s.sinceRV, s.name, fixtures.ControllerNamespace))
		}
	})
	Eventually(func() int { return healthyPods(ctx, s.name, s.app) }).WithTimeout(3*time.Minute).Should(Equal(int(s.replicas)), "every replica Ready")
	for _, c := range claimsOf(ctx, s.name) {
		s.originals = append(s.originals, c.Name)
	}
	for _, r := range s.rec.Sorted() {
		s.sinceRV = max(s.sinceRV, r.RV)
	}
	GinkgoWriter.Printf("%s: %d replicas Ready on claims %v\n", s.name, s.replicas, s.originals)
}

// govern creates the scenario's RotationPolicy, edited by edit.
func (s *scenario) govern(ctx context.Context, age string, edit func(*v1alpha1.RotationPolicy)) {
	p := fixtures.Policy(s.name, age)
	if edit != nil {
		edit(p)
	}
	Expect(kube.Create(ctx, p)).To(Succeed())
}

// updatePolicy edits the live RotationPolicy, retrying on a conflict.
func (s *scenario) updatePolicy(ctx context.Context, edit func(*v1alpha1.RotationPolicy)) {
	Eventually(func() error {
		p := &v1alpha1.RotationPolicy{}
		if err := kube.Get(ctx, client.ObjectKey{Name: s.name}, p); err != nil {
			return err
		}
		edit(p)
		return kube.Update(ctx, p)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// updatePool edits the live NodePool, retrying on a conflict.
func (s *scenario) updatePool(ctx context.Context, edit func(*karpv1.NodePool)) {
	Eventually(func() error {
		np := poolOf(ctx, s.name)
		edit(np)
		return kube.Update(ctx, np)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// pause stops further starts (every claim is young against 720h) and
// waits for any rotation in flight to end. A pass that read the policy
// before the update may still anchor a start after it (CI saw one 0.1 s
// after the last rotation ended), so the pool must stay without an anchor
// for quietFor — longer than a pass — not merely be seen without one.
func (s *scenario) pause(ctx context.Context, within time.Duration) {
	const quietFor = 5 * time.Second
	s.updatePolicy(ctx, func(p *v1alpha1.RotationPolicy) { p.Spec.AgeThreshold = "720h" })
	lastBusy := time.Now()
	Eventually(func() (time.Duration, error) {
		a, err := poolAnnotations(ctx, s.name)()
		if err != nil || len(v1alpha1.Anchors(a)) > 0 {
			lastBusy = time.Now()
		}
		return time.Since(lastBusy), err
	}).WithTimeout(within).WithPolling(200*time.Millisecond).Should(BeNumerically(">=", quietFor), "the rotations in flight end and none starts after")
}

// poolAnnotations polls the pool's annotations; a failed read is a failed
// poll (retried by Eventually), never a failed spec.
func poolAnnotations(ctx context.Context, name string) func() (map[string]string, error) {
	return func() (map[string]string, error) {
		np := &karpv1.NodePool{}
		err := kube.Get(ctx, client.ObjectKey{Name: name}, np)
		return np.Annotations, err
	}
}

// anchorOf polls the claim the pool anchors ("" when none).
func anchorOf(ctx context.Context, name string) func() (string, error) {
	return func() (string, error) {
		a, err := poolAnnotations(ctx, name)()
		return a[v1alpha1.AnnotationActiveRotation], err
	}
}

// awaitRotation waits for the pool to anchor a rotation for which ready
// holds (given the pool's annotations and the anchored claim), polling
// every 100 ms so a short phase is not missed, and returns the claim.
func (s *scenario) awaitRotation(ctx context.Context, within time.Duration, what string, ready func(pool map[string]string, claim string) bool) string {
	var claim string
	Eventually(func() (string, error) {
		a, err := poolAnnotations(ctx, s.name)()
		claim = a[v1alpha1.AnnotationActiveRotation]
		if err != nil || claim == "" || !ready(a, claim) {
			return "", err
		}
		return claim, nil
	}).WithTimeout(within).WithPolling(100*time.Millisecond).ShouldNot(BeEmpty(), what)
	return claim
}

// pending holds while the anchored claim's surge is pending.
func pending(ctx context.Context) func(map[string]string, string) bool {
	return func(_ map[string]string, claim string) bool { return claimState(ctx, claim)() == v1alpha1.StatePending }
}

// gone is a matcher body: the claim is NotFound (any other error says
// nothing about it).
func gone(ctx context.Context, claim string) func() error {
	return func() error { return kube.Get(ctx, client.ObjectKey{Name: claim}, &karpv1.NodeClaim{}) }
}

// claimState is the claim's state annotation ("" when unset or gone).
func claimState(ctx context.Context, claim string) func() string {
	return func() string {
		c := &karpv1.NodeClaim{}
		if err := kube.Get(ctx, client.ObjectKey{Name: claim}, c); err != nil {
			return ""
		}
		return c.Annotations[v1alpha1.AnnotationState]
	}
}

// events counts the Events with reason about objects named in names. A
// NodePool's Events count only for the NodePool of that name that exists
// now: Events outlive their object (an hour), and a scenario run again on
// the same cluster reuses its pool's name.
func events(ctx context.Context, reason string, names ...string) int {
	list := &corev1.EventList{}
	Expect(kube.List(ctx, list)).To(Succeed())
	n := 0
	for _, e := range list.Items {
		if e.Reason != reason || !slices.Contains(names, e.InvolvedObject.Name) {
			continue
		}
		if e.InvolvedObject.Kind == "NodePool" {
			np := &karpv1.NodePool{}
			if err := kube.Get(ctx, client.ObjectKey{Name: e.InvolvedObject.Name}, np); err != nil || np.UID != e.InvolvedObject.UID {
				continue
			}
		}
		n += max(int(e.Count), 1)
	}
	return n
}

// expectSettled runs the invariant checker the suites share
// (test/invariants) over the scenario once its rotations have ended:
// nothing of a rotation left on the pool, its claims, its nodes or in the
// controller's namespace; each of rotated gone; no more NodeClaims created
// than attempts plus extraNodes (replacements Karpenter provisions for
// Pods evicted without a surge); no completion or failure announced twice
// in the runs' logs or Events; the PDB's floor held. It prints the
// scenario's summary line.
func (s *scenario) expectSettled(ctx context.Context, runs []*controller, rotated []string, extraNodes int) {
	pools := []string{s.name}
	in := invariants.Input{
		Client: kube, Pools: pools, Namespace: fixtures.ControllerNamespace, Originals: rotated,
		Attempts: invariants.Attempts(s.rec, pools, s.sinceRV) + extraNodes,
		Created:  invariants.Created(s.rec, pools, s.sinceRV),
		Records:  s.rec, SinceRV: s.sinceRV,
	}
	for _, r := range runs {
		in.Logs = append(in.Logs, r.Log)
	}
	if s.pdb > 0 {
		in.Workloads = []invariants.Workload{{Namespace: s.name, Selector: s.app, MinHealthy: int(s.replicas - s.pdb)}}
	}
	for _, r := range runs {
		s.expectCountedOnce(r)
	}
	report, err := invariants.Check(ctx, in)
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("e2e summary: scenario=%s rotations=%d attempts=%d nodeclaims-created=%d violations=%d (%s)\n",
		s.name, report.Completions, in.Attempts-extraNodes, in.Created, len(report.Violations), report.Summary())
	Expect(report.Violations).To(BeEmpty(), report.String())
}

// expectCountedOnce: a live run's noderotation_completed_total for the
// pool, per outcome, equals its announcement lines — no completion or
// failure counted twice, or announced without being counted. A killed run's
// metrics died with it.
func (s *scenario) expectCountedOnce(r *controller) {
	if r.Exited() {
		return
	}
	pool := `"nodepool":"` + s.name + `"`
	for outcome, msg := range map[string]string{"success": `"rotation complete"`, "expired": `"rotation complete"`, "failure": `"rotation attempt failed"`} {
		// The run goes on meanwhile (a surge node comes due and rotates):
		// a completion between reading the lines and scraping the metric
		// is no double count, so the two are compared until they agree, a
		// few seconds at most (seen: 7 counted against 6 lines read a
		// moment before the seventh was written).
		lines := func() int {
			n := 0
			for _, l := range r.LogLines(msg) {
				if strings.Contains(l, pool) && (outcome == "failure" || strings.Contains(l, `"outcome":"`+outcome+`"`)) {
					n++
				}
			}
			return n
		}
		counted := func() float64 {
			return max(r.metric("noderotation_completed_total", `nodepool="`+s.name+`"`, `outcome="`+outcome+`"`), 0)
		}
		Eventually(func() []float64 {
			c := counted()
			return []float64{c, float64(lines()), counted()}
		}).WithTimeout(15*time.Second).WithPolling(500*time.Millisecond).Should(Satisfy(func(v []float64) bool { return v[0] == v[1] && v[1] == v[2] }),
			"%s: noderotation_completed_total{outcome=%q} (before and after) against the %s lines", r.Log, outcome, msg)
	}
}

// notFound wraps apierrors.IsNotFound for Satisfy.
var notFound = apierrors.IsNotFound

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
