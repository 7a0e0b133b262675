package rotation_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/announce"
	"github.com/noderotation/node-rotation-controller/internal/controller"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/prepull"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	"github.com/noderotation/node-rotation-controller/internal/table"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

var _ = Describe("bad state on objects", func() {
	It("never acts on a malformed or unknown annotation and says which key and value", func() {
		cases := []struct {
			pool, key, value string
			claim            map[string]string
			anchor           bool
			// gateOpen: no cooldown, so the failed claim's retry depends
			// on its malformed retry count (under a cooldown the release
			// does not, and runs: docs/design.md#bad-input)
			gateOpen bool
		}{
			{pool: "bad-freeze", key: v1alpha1.AnnotationFreeze, value: "next tuesday"},
			{pool: "bad-state", key: v1alpha1.AnnotationState, value: "limbo", claim: map[string]string{v1alpha1.AnnotationState: "limbo"}, anchor: true},
			{pool: "bad-retry", key: v1alpha1.AnnotationRetryCount, value: "-1", claim: map[string]string{
				v1alpha1.AnnotationState: "failed", v1alpha1.AnnotationFailedAt: rfc3339(time.Now().Add(-time.Hour)), v1alpha1.AnnotationRetryCount: "-1"}, anchor: true, gateOpen: true},
			{pool: "bad-started", key: v1alpha1.AnnotationStartedAt, value: "yesterday", claim: map[string]string{
				v1alpha1.AnnotationState: "pending", v1alpha1.AnnotationStartedAt: "yesterday"}, anchor: true},
		}
		for _, c := range cases {
			createClaim(fk.Claim{Pool: c.pool, Name: c.pool + "-old", Zone: "zone-a", Annotations: c.claim})
			if !c.anchor {
				// On the pool from its creation, with no gate but the malformed
				// freeze between the due claim and a start: the window is open,
				// no cooldown, no failure pause. A pass that ignored the value
				// would start at once.
				createPoolWith(c.pool, poolOptions{createdWith: map[string]string{c.key: c.value}, wait: waitNone})
				continue
			}
			// The cooldown only holds a start until the anchor is written;
			// an anchored pass does not consult it (a failed claim's does).
			createdWith := map[string]string{v1alpha1.AnnotationLastRotationAt: rfc3339(time.Now())}
			if c.gateOpen {
				createdWith = nil
			}
			createPoolWith(c.pool, poolOptions{createdWith: createdWith,
				annotations: map[string]string{v1alpha1.AnnotationActiveRotation: c.pool + "-old"}, surge: v1alpha1.SurgeSpec{CooldownAfter: "1h"}})
		}
		By("waiting for a pass over each pool: its Warning, or a decision on the pool seen governed")
		for _, c := range cases {
			Eventually(func() bool {
				return warningAbout(c.pool, c.key, c.value)() || coverage.passed(c.pool, "governed")() > 0 && !c.anchor
			}, timeout).Should(BeTrue(), "%s: reconciled", c.pool)
		}
		By("seeing no step taken on any of them")
		Consistently(func() []string {
			var acted []string
			for _, c := range cases {
				anchor, hasAnchor := getPool(c.pool).Annotations[v1alpha1.AnnotationActiveRotation]
				switch {
				case placeholder(c.pool+"-old") != nil:
					acted = append(acted, c.pool+": a placeholder")
				case claimDeleting(c.pool + "-old")():
					acted = append(acted, c.pool+": the claim is deleted")
				case !equality.Semantic.DeepEqual(claimAnnotations(c.pool+"-old")(), c.claim):
					acted = append(acted, fmt.Sprintf("%s: the claim's annotations became %v", c.pool, claimAnnotations(c.pool+"-old")()))
				case c.anchor && anchor != c.pool+"-old":
					acted = append(acted, c.pool+": the anchor was not kept for an operator to inspect")
				case !c.anchor && hasAnchor:
					acted = append(acted, c.pool+": a rotation started")
				}
			}
			return acted
		}, 3*time.Second).Should(BeEmpty())
		for _, c := range cases {
			Eventually(warningAbout(c.pool, c.key, c.value), timeout).Should(BeTrue(), "%s: a Warning naming %s=%q", c.pool, c.key, c.value)
		}
		assertsTransition("bad-state", "invalid.hold")
	})

	It("refuses an anchor that names a claim of another pool", func() {
		createClaim(fk.Claim{Pool: "foreign-owner", Name: "foreign-claim", Zone: "zone-a"})
		createPool("foreign", v1alpha1.SurgeSpec{}, map[string]string{v1alpha1.AnnotationActiveRotation: "foreign-claim"})
		Eventually(warningAbout("foreign", v1alpha1.AnnotationActiveRotation, "foreign-claim"), timeout).Should(BeTrue())
		Consistently(poolAnnotations("foreign"), 2*time.Second).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, "foreign-claim"))
		Expect(claimDeleting("foreign-claim")()).To(BeFalse())
		Expect(claimAnnotations("foreign-claim")()).NotTo(HaveKey(v1alpha1.AnnotationState))
	})
})

// warningAbout reports a Warning Event on the pool whose message names the
// annotation key and value.
func warningAbout(pool, key, value string) func() bool {
	return func() bool {
		list := &corev1.EventList{}
		Expect(env.Client.List(ctx, list)).To(Succeed())
		for _, e := range list.Items {
			if e.InvolvedObject.Name == pool && e.Type == corev1.EventTypeWarning && e.Reason == "InvalidAnnotation" &&
				containsAll(e.Message, key, value) {
				return true
			}
		}
		return false
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

var _ = Describe("the startup sweep", func() {
	It("removes what no anchor references and leaves an anchored rotation alone", func() {
		// A world of its own, laid out before any controller runs: what a
		// crash leaves behind is found by the startup sweep of the first
		// instance (in a running world, a governed pool's stranded rotation
		// is re-adopted or repaired by the next pass: hardening_test.go).
		sw := startWorldOf("sweep", false, 0)
		sw.use()
		DeferCleanup(func() {
			mainWorld.use()
			sw.stop()
		})

		// An anchored rotation in flight: its markers must survive.
		createClaim(fk.Claim{Pool: "sweep-live", Name: "sweep-live-old", Zone: "zone-a", Annotations: map[string]string{
			v1alpha1.AnnotationState: "pending", v1alpha1.AnnotationStartedAt: rfc3339(time.Now())}})
		livePool := createPoolWith("sweep-live", poolOptions{surge: v1alpha1.SurgeSpec{ReadyTimeout: "5m"}, wait: waitNone,
			createdWith: map[string]string{v1alpha1.AnnotationActiveRotation: "sweep-live-old"}})
		live := surge.Placeholder{Namespace: controllerNS, PriorityClass: priorityClass, Pool: livePool,
			Claim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "sweep-live-old"}}}.Build()
		Expect(env.Client.Create(ctx, live)).To(Succeed())
		mark(fk.NodeName("sweep-live-old"), func(n *corev1.Node) {
			n.Labels[v1alpha1.LabelSurgeFor] = "sweep-live-old"
			n.Spec.Unschedulable = true
			n.Annotations = map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true", v1alpha1.AnnotationDoNotDisruptOwned: "true", v1alpha1.AnnotationCordoned: "true"}
		})

		// Debris of rotations no anchor references: an orphaned mirror on an
		// ungoverned pool, a node we cordoned, and in a governed pool (closed
		// window: nothing starts) a pending claim no anchor owns, its
		// frozen node and its placeholder.
		createClaim(fk.Claim{Pool: "sweep-dead", Name: "sweep-cordoned", Zone: "zone-a"})
		createPoolWith("sweep-dead", poolOptions{noPolicy: true, annotations: map[string]string{v1alpha1.AnnotationActiveRotationState: "draining"}})
		createClaim(fk.Claim{Pool: "sweep-failed", Name: "sweep-ghost", Zone: "zone-a", Annotations: map[string]string{v1alpha1.AnnotationState: "pending"}})
		gonePool := createPoolWith("sweep-failed", poolOptions{closedWindow: true, wait: waitNone})
		ghostNode, cordonNode := fk.NodeName("sweep-ghost"), fk.NodeName("sweep-cordoned")
		mark(ghostNode, func(n *corev1.Node) {
			n.Labels[v1alpha1.LabelSurgeFor] = "sweep-ghost"
			n.Annotations = map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true", v1alpha1.AnnotationDoNotDisruptOwned: "true"}
		})
		mark(cordonNode, func(n *corev1.Node) {
			n.Spec.Unschedulable = true
			n.Annotations = map[string]string{v1alpha1.AnnotationCordoned: "true"}
		})
		ghost := surge.Placeholder{Namespace: controllerNS, PriorityClass: priorityClass, Pool: gonePool,
			Claim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "sweep-ghost"}}}.Build()
		Expect(env.Client.Create(ctx, ghost)).To(Succeed())
		// Each rotation's pre-pull Pod, a dependent of its placeholder:
		// envtest runs no garbage collector, so only the sweep's own
		// delete removes the ghost's.
		for _, ph := range []*corev1.Pod{live, ghost} {
			claim := ph.Labels[v1alpha1.LabelSurgeFor]
			Expect(env.Client.Create(ctx, prepull.Pod{Namespace: controllerNS, PriorityClass: priorityClass, Installer: "example.com/nrc:1",
				Claim: claim, Pool: ph.Labels[v1alpha1.LabelNodePool], Node: fk.NodeName(claim), Owner: ph, Timeout: time.Minute,
				Images: []prepull.Image{{Ref: "example.com/app:1", Fate: prepull.Pull}}}.Build())).To(Succeed())
		}

		By("starting a controller instance, wired as the binary wires it: its sweep runs before its first decision")
		startSweeper()

		Expect(placeholderExists("sweep-ghost")()).To(BeFalse())
		Expect(prePullPodExists("sweep-ghost")()).To(BeFalse(), "a pre-pull Pod no anchor references is swept")
		Expect(prePullPodExists("sweep-live-old")()).To(BeTrue(), "an anchored rotation's pre-pull Pod is not stale")
		Expect(unfrozen(ghostNode)()).To(BeTrue())
		Expect(uncordoned(cordonNode)()).To(BeTrue())
		Expect(claimAnnotations("sweep-ghost")()).To(And(HaveKeyWithValue(v1alpha1.AnnotationState, "failed"), HaveKey(v1alpha1.AnnotationFailedAt),
			HaveKeyWithValue(v1alpha1.AnnotationRetryCount, "1")), "a real failure record: retried after its backoff (hardening_test.go)")
		Expect(noRotationKeys("sweep-dead")()).To(BeEmpty())
		Expect(placeholderExists("sweep-live-old")()).To(BeTrue(), "an anchored rotation's placeholder is not stale")
		Expect(frozen(fk.NodeName("sweep-live-old"), "sweep-live-old")()).To(BeTrue())
		Expect(cordoned(fk.NodeName("sweep-live-old"))()).To(BeTrue())

		By("alerting on the claim it failed: a RotationFailed Warning and completed_total{outcome=\"failure\"}, once")
		Eventually(sweptWarnings("sweep-ghost"), timeout).Should(Equal(1))
		Eventually(scrape("noderotation_completed_total", series("sweep-failed", "outcome", "failure")), timeout).Should(Equal(1.0))
		Expect(claimAnnotations("sweep-live-old")()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "pending"), "the anchored claim is not swept")
		Expect(sweptWarnings("sweep-live-old")()).To(BeZero())

		By("a second instance's sweep finds nothing left to do, writes nothing and alerts nothing")
		before := []string{getNode(ghostNode).ResourceVersion, getNode(cordonNode).ResourceVersion, getPool("sweep-dead").ResourceVersion}
		startSweeper()
		Expect([]string{getNode(ghostNode).ResourceVersion, getNode(cordonNode).ResourceVersion, getPool("sweep-dead").ResourceVersion}).To(Equal(before))
		Consistently(sweptWarnings("sweep-ghost"), 2*time.Second).Should(Equal(1))
		Expect(scrape("noderotation_completed_total", series("sweep-failed", "outcome", "failure"))()).To(Equal(1.0))
	})
})

// startSweeper starts one more controller instance against the current
// world, as controller.Setup wires it, waits for its first decision — its
// startup sweep is over by then — then stops it.
func startSweeper() {
	GinkgoHelper()
	set := startInstances(env, "sweeper", 1, false, "")
	defer set.stop()
	Eventually(set.deciding, timeout).Should(Equal(1), "the new instance made its first decision")
}

// sweptWarnings counts the startup sweep's RotationFailed Warnings on a
// claim.
func sweptWarnings(claim string) func() int {
	return func() int {
		list := &corev1.EventList{}
		Expect(env.Client.List(ctx, list)).To(Succeed())
		n := 0
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "NodeClaim" && e.InvolvedObject.Name == claim && e.Type == corev1.EventTypeWarning &&
				e.Reason == "RotationFailed" && strings.Contains(e.Message, "startup sweep") {
				n += int(max(e.Count, 1))
			}
		}
		return n
	}
}

func mark(node string, mutate func(*corev1.Node)) {
	n := getNode(node)
	orig := n.DeepCopy()
	mutate(n)
	Expect(env.Client.Patch(ctx, n, client.MergeFrom(orig))).To(Succeed())
}

// staleReader serves the cached copy of one object as it was when captured,
// like an informer lagging the writes that followed.
// staleReader is a cache that has not caught up: it serves the stale copies
// it was given, and has not seen the objects in missing at all.
type staleReader struct {
	client.Reader
	stale   map[client.ObjectKey]client.Object
	missing map[client.ObjectKey]bool
}

func (s staleReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if s.missing[key] {
		return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
	}
	if o, ok := s.stale[key]; ok && reflect.TypeOf(o) == reflect.TypeOf(obj) {
		reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o.DeepCopyObject()).Elem())
		return nil
	}
	return s.Reader.Get(ctx, key, obj, opts...)
}

func (s staleReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := s.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	if l, ok := list.(*karpv1.NodeClaimList); ok {
		for i := range l.Items {
			if o, ok := s.stale[client.ObjectKeyFromObject(&l.Items[i])]; ok {
				l.Items[i] = *o.(*karpv1.NodeClaim).DeepCopy()
			}
		}
	}
	if l, ok := list.(*corev1.PodList); ok {
		kept := l.Items[:0]
		for _, p := range l.Items {
			if !s.missing[client.ObjectKeyFromObject(&p)] {
				kept = append(kept, p)
			}
		}
		l.Items = kept
	}
	return nil
}

var _ = Describe("a reconcile fed stale cache reads", func() {
	It("does nothing harmful after a completion or a rollback it has not seen", func() {
		eng, err := table.Load()
		Expect(err).NotTo(HaveOccurred())
		rec := record.NewFakeRecorder(100)
		manual := func(stale ...client.Object) *controller.NodePoolReconciler {
			m := map[client.ObjectKey]client.Object{}
			for _, o := range stale {
				m[client.ObjectKeyFromObject(o)] = o
			}
			cache := staleReader{Reader: env.Client, stale: m}
			return &controller.NodePoolReconciler{
				Client: env.Client, Fresh: env.Client, Engine: eng, Log: zap.New(zap.WriteTo(GinkgoWriter)),
				Observer:  &observe.Observer{Cache: cache, API: env.Client, Namespace: controllerNS, Clock: clock, Rules: eng},
				Announcer: announce.New(zap.New(zap.WriteTo(GinkgoWriter)), rec), Placeholder: controller.PlaceholderConfig{Namespace: controllerNS, PriorityClass: priorityClass},
			}
		}

		By("a completed rotation seen through a pool that still shows the anchor")
		const pool, old, surgeClaim = "lag", "lag-old", "lag-surge"
		createClaim(fk.Claim{Pool: pool, Name: old, Zone: "zone-a"})
		createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "5m", CooldownAfter: "1h"}, nil)
		Eventually(placeholderExists(old), timeout).Should(BeTrue())
		createClaim(fk.Claim{Pool: pool, Name: surgeClaim, Zone: "zone-a"})
		Expect(karpenter.BindAndRun(ctx, placeholder(old), fk.NodeName(surgeClaim))).To(Succeed())
		Eventually(claimDeleting(old), timeout).Should(BeTrue())
		stalePool := getPool(pool) // anchored, draining mirror
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		released := getPool(pool)
		_, err = manual(stalePool).Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(stalePool)})
		Expect(err).NotTo(HaveOccurred())
		Expect(getPool(pool).Annotations).To(Equal(released.Annotations), "the stale pass lost the release: it wrote nothing")
		Expect(rec.Events).NotTo(Receive(ContainSubstring("RotationCompleted")), "and announced nothing")

		By("a rolled-back claim seen through a cache that still shows it pending")
		const rpool, rold = "lag-rollback", "lag-rollback-old"
		createClaim(fk.Claim{Pool: rpool, Name: rold, Zone: "zone-a"})
		createPool(rpool, v1alpha1.SurgeSpec{ReadyTimeout: "3s"}, nil)
		Eventually(claimAnnotations(rold), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationState, "pending"))
		staleClaim := &karpv1.NodeClaim{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: rold}, staleClaim)).To(Succeed())
		staleAnchored := getPool(rpool)
		Eventually(claimAnnotations(rold), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationState, "failed"))
		failed := claimAnnotations(rold)()
		_, err = manual(staleAnchored, staleClaim).Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(staleAnchored)})
		Expect(err).NotTo(HaveOccurred())
		Expect(claimAnnotations(rold)()).To(Equal(failed), "no pending restored, no started-at re-stamped, retry-count kept")
		Expect(rec.Events).NotTo(Receive(ContainSubstring("RotationFailed")))
	})
})
