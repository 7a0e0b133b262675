package rotation_test

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr/funcr"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/announce"
	"github.com/noderotation/node-rotation-controller/internal/controller"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	"github.com/noderotation/node-rotation-controller/internal/table"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// Regression tests of the recovery defects found by killing the controller
// after every write on real Karpenter (docs/design.md#hardening).

// startPending creates a due claim and a governed pool and waits until the
// claim is pending with its placeholder: a live surge rotation.
func startPending(pool, claim string) {
	GinkgoHelper()
	createClaim(fk.Claim{Pool: pool, Name: claim, Zone: "zone-a"})
	createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "1h"}, nil)
	Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, claim))
	Eventually(placeholderExists(claim), timeout).Should(BeTrue())
	Eventually(frozen(fk.NodeName(claim), claim), timeout).Should(BeTrue())
	Eventually(cordoned(fk.NodeName(claim)), timeout).Should(BeTrue())
}

// neverTwoPlaceholders polls until done reports true, failing the moment
// both claims have a placeholder at once.
func neverTwoPlaceholders(a, b string, done func() bool) {
	GinkgoHelper()
	deadline := time.Now().Add(timeout)
	for !done() {
		Expect(placeholderExists(a)() && placeholderExists(b)()).To(BeFalse(), "placeholders of %s and %s coexist", a, b)
		Expect(time.Now().Before(deadline)).To(BeTrue(), "timed out")
		time.Sleep(20 * time.Millisecond)
	}
}

// policyOf returns the pool's policy and a function that deletes it, and
// one that restores it.
func losePolicy(pool string) (restore func()) {
	GinkgoHelper()
	p := &v1alpha1.RotationPolicy{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: pool}, p)).To(Succeed())
	Expect(env.Client.Delete(ctx, p)).To(Succeed())
	return func() {
		GinkgoHelper()
		again := &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: p.Name}, Spec: p.Spec}
		Expect(env.Client.Create(ctx, again)).To(Succeed())
	}
}

var _ = Describe("a lost or overwritten anchor", func() {
	It("re-adopts the pending rotation whose anchor was removed, before anything new starts, with one Warning", func() {
		const pool, old, next = "lost-anchor", "lost-anchor-old", "lost-anchor-next"
		startPending(pool, old)
		createClaim(fk.Claim{Pool: pool, Name: next, Zone: "zone-a"}) // due: an idle-looking pool would start it
		annotatePool(pool, map[string]string{v1alpha1.AnnotationActiveRotation: ""})
		By("writing the anchor back for the stranded claim")
		assertsTransition(pool, "idle.readopt")
		Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, old))
		Eventually(eventCount(pool, "AnchorRestored"), timeout).Should(BeNumerically("==", 1))
		By("never starting the next rotation meanwhile")
		Consistently(placeholderExists(next), 3*time.Second).Should(BeFalse())
		Expect(claimAnnotations(next)()).NotTo(HaveKey(v1alpha1.AnnotationState))
		Expect(claimAnnotations(old)()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "pending"), "the rotation goes on")
		Expect(eventCount(pool, "AnchorRestored")()).To(BeNumerically("==", 1), "said once, by the pass whose write restored it")
	})

	It("repairs the rotation stranded by an anchor overwritten with another claim's name, before that one goes on", func() {
		const pool, old, other = "overwritten", "overwritten-old", "overwritten-other"
		startPending(pool, old)
		createClaim(fk.Claim{Pool: pool, Name: other, Zone: "zone-a"})
		anchors.expectOverwrite(pool, other)
		annotatePool(pool, map[string]string{v1alpha1.AnnotationActiveRotation: other})
		By("never holding two placeholders at once, and reserving for the anchored claim once the stranded one is repaired")
		neverTwoPlaceholders(old, other, func() bool { return placeholderExists(other)() && !placeholderExists(old)() })
		assertsTransition(pool, "pending.repair-stranded")
		By("failing the stranded claim with a real failure record and reversing its node markers")
		a := claimAnnotations(old)()
		Expect(a).To(And(HaveKeyWithValue(v1alpha1.AnnotationState, "failed"), HaveKey(v1alpha1.AnnotationFailedAt),
			HaveKeyWithValue(v1alpha1.AnnotationRetryCount, "1"), Not(HaveKey(v1alpha1.AnnotationStartedAt))))
		Eventually(unfrozen(fk.NodeName(old)), timeout).Should(BeTrue())
		Eventually(uncordoned(fk.NodeName(old)), timeout).Should(BeTrue())
		By("saying so with a Warning naming the claim (one per instance that repaired something)")
		Eventually(eventCount(pool, "StrandedRepaired"), timeout).Should(BeNumerically(">=", 1))
		Expect(eventCount(pool, "StrandedRepaired")()).To(BeNumerically("<=", acting))
	})

	It("puts the live rotation in the place of an older copy's anchor in one write, counting nothing for the gone claim", func() {
		const pool, old = "restored-copy", "restored-copy-old"
		startPending(pool, old)
		By("replacing the pool with an older copy: its anchor names a claim long gone, with that rotation's draining mirror")
		anchors.expectOverwrite(pool, "restored-copy-gone", old)
		annotatePool(pool, map[string]string{v1alpha1.AnnotationActiveRotation: "restored-copy-gone", v1alpha1.AnnotationActiveRotationState: "draining"})
		assertsTransition(pool, "gone.superseded")
		Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, old))
		By("saying so once, naming the value it found")
		Eventually(eventCount(pool, "AnchorRestored"), timeout).Should(BeNumerically("==", 1))
		Expect(eventMessages(pool, "AnchorRestored")).To(ConsistOf(ContainSubstring(
			"named NodeClaim restored-copy-gone, which is gone, while NodeClaim " + old + " was pending")))
		Expect(getPool(pool).Annotations).NotTo(HaveKey(v1alpha1.AnnotationLastRotationAt), "no phantom success for the gone claim")
		Consistently(scrape("noderotation_completed_total", series(pool, "outcome", "success")), 2*time.Second).Should(Equal(-1.0))
		Expect(scrape("noderotation_completed_total", series(pool, "outcome", "expired"))()).To(Equal(-1.0))
		Expect(eventCount(pool, "RotationCompleted")()).To(BeZero())
		Expect(claimAnnotations(old)()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "pending"), "the live rotation goes on")
	})

	It("releases an anchor naming a gone claim beside another rotation's placeholder without a word, counting nothing", func() {
		const pool, gone, other = "superseded-artefacts", "superseded-artefacts-gone", "superseded-artefacts-other"
		createClaim(fk.Claim{Pool: pool, Name: other, Zone: "zone-a"})
		createPoolWith(pool, poolOptions{createdWith: map[string]string{v1alpha1.AnnotationFreeze: rfc3339(time.Now().Add(time.Hour))}})
		By("another rotation's placeholder that a finalizer keeps terminating once the repair deletes it")
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool, Labels: map[string]string{"test": pool}}}
		ph := surge.Placeholder{Namespace: controllerNS, PriorityClass: priorityClass, Pool: np,
			Claim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: other}}}.Build()
		ph.Finalizers = []string{"test.noderotation.io/hold"}
		Expect(env.Client.Create(ctx, ph)).To(Succeed())
		assertsTransition(pool, "idle.repair-stranded")
		Eventually(func() bool { p := placeholder(other); return p != nil && p.DeletionTimestamp != nil }, timeout).Should(BeTrue())
		By("an anchor naming a claim that is gone, with a mirror: not orphaned, and only artefacts are live")
		annotatePool(pool, map[string]string{v1alpha1.AnnotationActiveRotation: gone, v1alpha1.AnnotationActiveRotationState: "pending"})
		assertsTransition(pool, "gone.superseded-artefacts")
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		Expect(eventCount(pool, "AnchorRestored")()).To(BeZero(), "no rotation was re-adopted")
		Consistently(scrape("noderotation_completed_total", series(pool, "outcome", "expired")), 2*time.Second).Should(Equal(-1.0))
		Expect(getPool(pool).Annotations).NotTo(HaveKey(v1alpha1.AnnotationLastRotationAt))
		Expect(eventCount(pool, "RotationCompleted")()).To(BeZero())
	})

	It("repairs node markers no anchor names in an idle pool before anything starts", func() {
		const pool, claim = "leftover", "leftover-a"
		createClaim(fk.Claim{Pool: pool, Name: claim, Zone: "zone-a"})
		createPoolWith(pool, poolOptions{createdWith: map[string]string{v1alpha1.AnnotationFreeze: rfc3339(time.Now().Add(time.Hour))}})
		mark(fk.NodeName(claim), func(n *corev1.Node) { // a cordon of ours whose rotation is gone
			n.Spec.Unschedulable = true
			n.Annotations = map[string]string{v1alpha1.AnnotationCordoned: "true"}
		})
		Eventually(uncordoned(fk.NodeName(claim)), timeout).Should(BeTrue())
		assertsTransition(pool, "idle.repair-stranded")
		Eventually(eventCount(pool, "StrandedRepaired"), timeout).Should(BeNumerically(">=", 1))
		Expect(eventCount(pool, "StrandedRepaired")()).To(BeNumerically("<=", acting), "said by the pass whose write repaired it")
	})

	It("releases an anchor naming a claim that left no trace, with a Warning, never counting an expiry", func() {
		const pool = "orphaned"
		createPool(pool, v1alpha1.SurgeSpec{}, map[string]string{v1alpha1.AnnotationActiveRotation: "orphaned-never-existed"})
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		assertsTransition(pool, "gone.orphaned-anchor")
		Eventually(eventCount(pool, "OrphanedAnchor"), timeout).Should(BeNumerically("==", 1))
		Consistently(scrape("noderotation_completed_total", series(pool, "outcome", "expired")), 2*time.Second).Should(Equal(-1.0))
		Expect(getPool(pool).Annotations).NotTo(HaveKey(v1alpha1.AnnotationLastRotationAt))
	})
})

var _ = Describe("governance lost after the old claim's delete", func() {
	// deletingRotation anchors pool on a draining claim Karpenter is
	// deleting, with a due claim beside it that an open gate would start.
	deletingRotation := func(pool, old, next string) {
		GinkgoHelper()
		createClaim(fk.Claim{Pool: pool, Name: old, Zone: "zone-a", Annotations: map[string]string{v1alpha1.AnnotationState: "draining"}})
		createClaim(fk.Claim{Pool: pool, Name: next, Zone: "zone-a"})
		Expect(env.Client.Delete(ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: old}})).To(Succeed())
		createPoolWith(pool, poolOptions{
			createdWith: map[string]string{v1alpha1.AnnotationFreeze: rfc3339(time.Now().Add(time.Hour))},
			annotations: map[string]string{v1alpha1.AnnotationActiveRotation: old, v1alpha1.AnnotationActiveRotationState: "draining"},
		})
		annotatePool(pool, map[string]string{v1alpha1.AnnotationFreeze: ""}) // the gate is now open but for the anchor
		assertsTransition(pool, "draining.wait")
	}

	// heldAndSaid: the pool lost its policy mid-drain; the gate is held,
	// the loss recorded on the pool and GovernanceLost said once, worded
	// for a drain that cannot be rolled back.
	heldAndSaid := func(pool, old string) {
		GinkgoHelper()
		assertsTransition(pool, "draining.governance-lost-hold")
		Eventually(poolAnnotations(pool), timeout).Should(And(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, old),
			HaveKeyWithValue(v1alpha1.AnnotationActiveRotationState, v1alpha1.StateGovernanceLost)))
		Eventually(eventCount(pool, "GovernanceLost"), timeout).Should(BeNumerically("==", 1))
		Consistently(eventCount(pool, "GovernanceLost"), 2*time.Second).Should(BeNumerically("==", 1))
		Expect(eventMessages(pool, "GovernanceLost")).To(ConsistOf(ContainSubstring("rotation of " + old + " cannot be rolled back, its delete is issued")))
		Expect(poolAnnotations(pool)()).To(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, old), "the gate is held")
	}
	// noSuccess: the drain's end counted nothing and said nothing more.
	noSuccess := func(pool string) {
		GinkgoHelper()
		Expect(getPool(pool).Annotations).NotTo(HaveKey(v1alpha1.AnnotationLastRotationAt), "no success counted")
		Consistently(scrape("noderotation_completed_total", series(pool, "outcome", "success")), 2*time.Second).Should(Equal(-1.0))
		Expect(eventCount(pool, "RotationCompleted")()).To(BeZero())
		Expect(eventCount(pool, "GovernanceLost")()).To(BeNumerically("==", 1), "said by the hold, never again")
	}

	It("keeps the gate while the claim drains, says so once, and counts no success though the pool is governed again", func() {
		const pool, old, next = "lost-restored", "lost-restored-old", "lost-restored-next"
		deletingRotation(pool, old, next)
		restore := losePolicy(pool)
		heldAndSaid(pool, old)
		restore()
		By("no second rotation while the first claim exists, and the loss stays recorded")
		Consistently(placeholderExists(next), 3*time.Second).Should(BeFalse())
		Expect(poolAnnotations(pool)()).To(HaveKeyWithValue(v1alpha1.AnnotationActiveRotationState, v1alpha1.StateGovernanceLost))
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(poolAnnotations(pool), timeout).ShouldNot(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, old))
		assertsTransition(pool, "gone.complete")
		noSuccess(pool)
	})

	It("releases the gate without a success once the claim is gone while the pool is still ungoverned", func() {
		const pool, old, next = "lost-released", "lost-released-old", "lost-released-next"
		deletingRotation(pool, old, next)
		losePolicy(pool)
		heldAndSaid(pool, old)
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		assertsTransition(pool, "gone.governance-lost")
		noSuccess(pool)
	})

	It("says the claim is gone, not rolled back, when it was gone before any pass saw the loss", func() {
		const pool, old = "lost-gone", "lost-gone-old"
		createPoolWith(pool, poolOptions{createdWith: map[string]string{v1alpha1.AnnotationFreeze: rfc3339(time.Now().Add(time.Hour))}})
		losePolicy(pool)
		By("the pool as the controller left it mid-drain, its claim already gone")
		annotatePool(pool, map[string]string{v1alpha1.AnnotationActiveRotation: old, v1alpha1.AnnotationActiveRotationState: "draining"})
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		assertsTransition(pool, "gone.governance-lost")
		Eventually(eventCount(pool, "GovernanceLost"), timeout).Should(BeNumerically("==", 1))
		Expect(eventMessages(pool, "GovernanceLost")).To(ConsistOf(ContainSubstring("rotation of " + old + " ended without a success: the NodeClaim is gone")))
		noSuccess(pool)
	})
})

var _ = Describe("a stop inside a two-write step", func() {
	It("counts an expiry once when the stop fell between its announcement and the anchor clear", func() {
		for _, gone := range []bool{false, true} {
			pool := fmt.Sprintf("expired-once-%v", gone)
			old := pool + "-old"
			createClaim(fk.Claim{Pool: pool, Name: old, Zone: "zone-a"})
			Expect(env.Client.Delete(ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: old}})).To(Succeed())
			if gone {
				Expect(karpenter.Finalize(ctx, old)).To(Succeed())
			}
			// what the announcing pass left: the expiry recorded on the pool
			createPoolWith(pool, poolOptions{
				createdWith: map[string]string{v1alpha1.AnnotationActiveRotationState: "expired"},
				annotations: map[string]string{v1alpha1.AnnotationActiveRotation: old},
			})
			Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
			assertsTransition(pool, "expired.cleanup")
			Consistently(scrape("noderotation_completed_total", series(pool, "outcome", "expired")), 2*time.Second).Should(Equal(-1.0),
				"the pass that recorded the expiry announced it; no later pass does")
			if !gone {
				Expect(claimAnnotations(old)()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "expired"), "so no startup sweep fails it later")
				Expect(karpenter.Finalize(ctx, old)).To(Succeed())
			}
		}
	})

	It("finishes a forceful-fallback start stopped between its anchor write and the claim's state write", func() {
		const pool, old = "half-fallback", "half-fallback-old"
		createClaim(fk.Claim{Pool: pool, Name: old, Zone: "zone-a"})
		createPoolWith(pool, poolOptions{
			createdWith: map[string]string{v1alpha1.AnnotationFreeze: rfc3339(time.Now().Add(time.Hour))}, // nothing starts by itself
			annotations: map[string]string{
				v1alpha1.AnnotationActiveRotation: old, v1alpha1.AnnotationRotationMode: v1alpha1.RotationModeFallback,
				v1alpha1.AnnotationActiveRotationState: "draining", v1alpha1.AnnotationDrainingAt: rfc3339(time.Now()),
			},
		})
		By("draining it, never down the surge path")
		Eventually(claimDeleting(old), timeout).Should(BeTrue())
		assertsTransition(pool, "draining.delete-claim")
		Expect(claimAnnotations(old)()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "draining"))
		Expect(placeholderExists(old)()).To(BeFalse(), "no placeholder: the surge-less path")
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
	})
})

var _ = Describe("Warnings under a flood of malformed annotations", func() {
	It("says each bad value once per instance, and a later GovernanceLost still reaches the pool", func() {
		const pool, bad = "flood", 30 // past client-go's burst of 25 Events per object and reason
		for i := 0; i < bad; i++ {
			createClaim(fk.Claim{Pool: pool, Name: fmt.Sprintf("flood-bad-%02d", i), Zone: "zone-a", Annotations: map[string]string{
				v1alpha1.AnnotationState: "failed", v1alpha1.AnnotationFailedAt: fmt.Sprintf("garbage-%d", i)}})
		}
		const old = "flood-old"
		createClaim(fk.Claim{Pool: pool, Name: old, Zone: "zone-a"})
		createPoolWith(pool, poolOptions{
			createdWith: map[string]string{v1alpha1.AnnotationFreeze: rfc3339(time.Now().Add(time.Hour))},
			annotations: map[string]string{v1alpha1.AnnotationActiveRotation: old},
		})
		By("saying the bad values, and never again over later passes")
		Eventually(coverage.passCount(pool), timeout).Should(BeNumerically(">=", 2*acting))
		// each instance's 30 are cut at client-go's burst of 25 per object and reason
		Eventually(eventCount(pool, "InvalidAnnotation"), timeout).Should(BeNumerically("==", 25*acting))
		said := eventCount(pool, "InvalidAnnotation")()
		for i := 0; i < 2; i++ {
			before := coverage.passCount(pool)()
			annotatePool(pool, map[string]string{"test.noderotation.io/poke": fmt.Sprint(i)})
			Eventually(coverage.passCount(pool), timeout).Should(BeNumerically(">=", before+acting))
		}
		Consistently(eventCount(pool, "InvalidAnnotation"), 2*time.Second).Should(Equal(said), "no bad value said twice")
		By("losing governance mid-rotation: the GovernanceLost Warning is not lost to the flood")
		losePolicy(pool)
		assertsTransition(pool, "pending.governance-lost")
		Eventually(eventCount(pool, "GovernanceLost"), timeout).Should(BeNumerically("==", 1))
	})
})

var _ = Describe("what the startup sweep and a healthy surge leave", func() {
	It("rotates a swept claim again once its backoff is over", func() {
		const pool, swept = "swept-retry", "swept-retry-claim"
		// the record the startup sweep writes (failed-at, retry-count 1),
		// an hour old: the pool's 1h retryBackoff is over
		createClaim(fk.Claim{Pool: pool, Name: swept, Zone: "zone-a", Annotations: map[string]string{
			v1alpha1.AnnotationState: "failed", v1alpha1.AnnotationFailedAt: rfc3339(time.Now().Add(-61 * time.Minute)), v1alpha1.AnnotationRetryCount: "1"}})
		createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "1h"}, nil)
		By("starting its rotation: a candidate again, not skipped for its record")
		Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, swept))
		assertsTransition(pool, "idle.start")
		Eventually(claimAnnotations(swept), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationState, "pending"))
		Expect(eventCount(pool, "InvalidAnnotation")()).To(BeZero(), "a well-formed failure record is no malformed annotation")
	})

	It("says nothing of a placeholder that waits unscheduled while Karpenter launches its node", func() {
		const pool, old, surgeClaim = "quiet-surge", "quiet-surge-old", "quiet-surge-new"
		startPending(pool, old)
		By("the scheduler marking the placeholder unschedulable, as it does until the new node is Ready")
		ph := placeholder(old)
		ph.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector"}}
		Expect(env.Client.Status().Update(ctx, ph)).To(Succeed())
		By("Karpenter launching the surge NodeClaim for it")
		_, err := karpenter.CreateClaim(ctx, fk.Claim{Pool: pool, Name: surgeClaim, Zone: "zone-a"})
		Expect(err).NotTo(HaveOccurred())
		assertsTransition(pool, "pending.await-surge")
		Consistently(eventCount(old, "SurgeUnschedulable"), 3*time.Second).Should(BeZero(), "a healthy rotation is not a Warning")
		Expect(karpenter.BindAndRun(ctx, placeholder(old), fk.NodeName(surgeClaim))).To(Succeed())
		Eventually(claimDeleting(old), timeout).Should(BeTrue())
		Expect(eventCount(old, "SurgeUnschedulable")()).To(BeZero())
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
	})
})

// lagging is one more pass — a second instance — on a lagging cache, with
// its log lines captured.
func lagging(cache staleReader) (*controller.NodePoolReconciler, *[]string) {
	GinkgoHelper()
	eng, err := table.Load()
	Expect(err).NotTo(HaveOccurred())
	var lines []string
	var mu sync.Mutex
	log := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	return &controller.NodePoolReconciler{
		Client: env.Client, Fresh: env.Client, Engine: eng, Log: log,
		Observer:    &observe.Observer{Cache: cache, API: env.Client, Namespace: controllerNS, Clock: clock, Rules: eng},
		Announcer:   announce.New(log, record.NewFakeRecorder(100)),
		Placeholder: controller.PlaceholderConfig{Namespace: controllerNS, PriorityClass: priorityClass},
	}, &lines
}

func said(lines *[]string, msg string) int {
	n := 0
	for _, l := range *lines {
		if strings.Contains(l, `"msg"="`+msg+`"`) {
			n++
		}
	}
	return n
}

var _ = Describe("announcements under cache lag", func() {
	It("says 'surge placeholder created' and 'drain started' only for a create or delete that changed something", func() {
		const pool, old, surgeClaim = "lagged", "lagged-old", "lagged-new"
		startPending(pool, old)
		stale := &karpv1.NodeClaim{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: old}, stale)).To(Succeed())
		phKey := client.ObjectKeyFromObject(placeholder(old))

		By("a pass whose cache has not seen the placeholder: its create finds it there")
		r, lines := lagging(staleReader{Reader: env.Client, missing: map[client.ObjectKey]bool{phKey: true}})
		_, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: pool}})
		Expect(err).NotTo(HaveOccurred())
		Expect(said(lines, "surge placeholder created")).To(BeZero(), "created by an earlier pass, not this one")

		By("the drain issued; then a pass whose cache still shows the claim draining but not deleted")
		_, err = karpenter.CreateClaim(ctx, fk.Claim{Pool: pool, Name: surgeClaim, Zone: "zone-a"})
		Expect(err).NotTo(HaveOccurred())
		Expect(karpenter.BindAndRun(ctx, placeholder(old), fk.NodeName(surgeClaim))).To(Succeed())
		Eventually(claimDeleting(old), timeout).Should(BeTrue())
		stale.Annotations[v1alpha1.AnnotationState] = v1alpha1.StateDraining // as it was between the state write and the delete
		r, lines = lagging(staleReader{Reader: env.Client, stale: map[client.ObjectKey]client.Object{client.ObjectKeyFromObject(stale): stale}})
		_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: pool}})
		Expect(err).NotTo(HaveOccurred())
		Expect(said(lines, "drain started")).To(BeZero(), "the delete was issued by an earlier pass")
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
	})

	It("keeps a completion's figures when it is retried after its unfreeze landed", func() {
		const pool, old, surgeClaim = "retried-completion", "retried-completion-old", "retried-completion-new"
		startPending(pool, old)
		_, err := karpenter.CreateClaim(ctx, fk.Claim{Pool: pool, Name: surgeClaim, Zone: "zone-a"})
		Expect(err).NotTo(HaveOccurred())
		Expect(karpenter.BindAndRun(ctx, placeholder(old), fk.NodeName(surgeClaim))).To(Succeed())
		Eventually(claimDeleting(old), timeout).Should(BeTrue())
		Expect(poolAnnotations(pool)()).To(HaveKeyWithValue(v1alpha1.AnnotationSurgeNode, fk.NodeName(surgeClaim)), "recorded at surge-ready")
		By("the completion's unfreeze landing, then the pass stopping before the release")
		mark(fk.NodeName(surgeClaim), func(n *corev1.Node) {
			delete(n.Labels, v1alpha1.LabelSurgeFor)
			n.Annotations = map[string]string{}
		})
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		By("the retried completion still naming the surge node and its path")
		Eventually(func() []string {
			list := &corev1.EventList{}
			Expect(env.Client.List(ctx, list)).To(Succeed())
			var msgs []string
			for _, e := range list.Items {
				if e.InvolvedObject.Name == pool && e.Reason == "RotationCompleted" {
					msgs = append(msgs, e.Message)
				}
			}
			return msgs
		}, timeout).Should(ConsistOf(ContainSubstring("surgePath provisioned")))
	})
})
