package rotation_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

func createClaim(c fk.Claim) {
	_, err := karpenter.CreateClaim(ctx, c)
	Expect(err).NotTo(HaveOccurred())
}

func policyCondition(name, typ string) func() *metav1.Condition {
	return func() *metav1.Condition {
		p := &v1alpha1.RotationPolicy{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return nil
		}
		return meta.FindStatusCondition(p.Status.Conditions, typ)
	}
}

func reason(r string) OmegaMatcher { return And(Not(BeNil()), HaveField("Reason", r)) }

// The three level-triggered refusals, as specs run in the main world (two
// instances, leader election off: one Warning per instance) and in the
// leader-election world (one in total).

func tieSpec(pool string) {
	createClaim(fk.Claim{Pool: pool, Name: pool + "-old", Zone: "zone-a"})
	createPoolWith(pool, poolOptions{})
	rival := &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: pool + "-rival"}, Spec: v1alpha1.RotationPolicySpec{
		NodePoolSelector:   metav1.LabelSelector{MatchLabels: map[string]string{"test": pool}},
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}, Start: "00:00", End: "24:00"}},
	}}
	// The first policy may already have started a rotation: the tie then
	// rolls it back as a loss of governance; either way none remains.
	Expect(env.Client.Create(ctx, rival)).To(Succeed())
	Eventually(eventCount(pool, "PolicyConflict"), timeout).Should(BeNumerically(">=", 1))
	Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
	Consistently(poolAnnotations(pool), 2*time.Second).ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation))
	Eventually(policyCondition(pool, "Ready"), timeout).Should(reason("Conflict"))
	Eventually(scrape("noderotation_policy_conflict", series(pool)), timeout).Should(Equal(1.0))
	Eventually(policyCondition(pool+"-rival", "Ready"), timeout).Should(reason("Conflict"))
	expectAnnouncedOncePerActor(pool, "PolicyConflict")
	assertsTransition(pool, "idle.policy-conflict")
}

func staticSpec(pool string) {
	createClaim(fk.Claim{Pool: pool, Name: pool + "-old", Zone: "zone-a"})
	createPoolWith(pool, poolOptions{closedWindow: true, pool: func(np *karpv1.NodePool) { np.Spec.Replicas = ptr.To(int64(1)); np.Spec.Limits = nil }})
	openWindow(pool)
	Eventually(eventCount(pool, "StaticNodePool"), timeout).Should(BeNumerically(">=", 1))
	Eventually(scrape("noderotation_window_active", series(pool)), timeout).Should(Equal(1.0), "the window is open")
	Consistently(poolAnnotations(pool), 2*time.Second).ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation))
	expectAnnouncedOncePerActor(pool, "StaticNodePool")
	assertsTransition(pool, "idle.static-pool")
}

func headroomSpec(pool string) {
	createClaim(fk.Claim{Pool: pool, Name: pool + "-old", Zone: "zone-a"})
	_, err := karpenter.RunPod(ctx, workloadNS, pool+"-app", fk.NodeName(pool+"-old"), "3")
	Expect(err).NotTo(HaveOccurred())
	createPoolWith(pool, poolOptions{closedWindow: true, pool: func(np *karpv1.NodePool) {
		np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("6")}
	}})
	np := getPool(pool)
	np.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	Expect(env.Client.Status().Update(ctx, np)).To(Succeed())
	openWindow(pool)
	Eventually(eventCount(pool, "InsufficientHeadroom"), timeout).Should(BeNumerically(">=", 1))
	Consistently(poolAnnotations(pool), 2*time.Second).ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation))
	expectAnnouncedOncePerActor(pool, "InsufficientHeadroom")
	assertsTransition(pool, "idle.insufficient-headroom")
}

var _ = Describe("start-path gates", func() {
	It("leaves an ungoverned pool alone", func() {
		createClaim(fk.Claim{Pool: "orphan", Name: "orphan-old", Zone: "zone-a"})
		createPoolWith("orphan", poolOptions{noPolicy: true})
		By("waiting until every acting instance has passed over the pool and found it ungoverned")
		Eventually(coverage.passed("orphan", "ungoverned"), timeout).Should(BeNumerically(">=", acting))
		assertsTransition("orphan", "idle.ungoverned")
		By("then seeing no mark of the controller on the pool, its claim or its node, and no series")
		Consistently(func() []string { return traces("orphan", "orphan-old") }, 3*time.Second).Should(BeEmpty())
		Expect(scrape("noderotation_candidates", series("orphan"))()).To(Equal(-1.0), "an ungoverned pool has no series")
	})

	It("refuses to rotate a pool two policies tie for, and says so once per acting instance", func() { tieSpec("tie") })

	It("refuses to rotate under an invalid policy whose valid window is open, and marks it Invalid", func() {
		createClaim(fk.Claim{Pool: "invalid", Name: "invalid-old", Zone: "zone-a"})
		createPoolWith("invalid", poolOptions{wait: waitPass, policy: func(p *v1alpha1.RotationPolicy) {
			// The first window is open around the clock; the second does not
			// resolve, so the policy is invalid. Treated as valid, it would
			// rotate the due claim at once.
			p.Spec.MaintenanceWindows = append(p.Spec.MaintenanceWindows, v1alpha1.MaintenanceWindow{
				Timezone: "Mars/Olympus_Mons", Days: []v1alpha1.Weekday{"Mon"}, Start: "00:00", End: "01:00"})
		}})
		Eventually(policyCondition("invalid", "Ready"), timeout).Should(And(reason("Invalid"), HaveField("Message", ContainSubstring(`timezone "Mars/Olympus_Mons"`))))
		Consistently(func() []string { return traces("invalid", "invalid-old") }, 3*time.Second).Should(BeEmpty(), "no anchor, no stamp, nothing on the claim")
		Expect(scrape("noderotation_policy_conflict", series("invalid"))()).To(Equal(1.0), "an invalid policy blocks the pool")
		assertsTransition("invalid", "idle.policy-invalid")
	})

	It("blocks starts on a fatal finding under an open window and reports it in Feasible", func() {
		createClaim(fk.Claim{Pool: "infeasible", Name: "infeasible-old", Zone: "zone-a", ExpireAfter: "1h"})
		// Derived age threshold A = expireAfter − (K·P + t_rot) = 1h − (2·1m
		// + 15m + 1h + 2m) < 0: AgeThresholdNotPositive is fatal. The window
		// is open around the clock and the claim (its own expireAfter 1h) is
		// due — its trigger, deadline − lead, is already past — so only the
		// feasibility gate stands between the pool and a start.
		createPoolWith("infeasible", poolOptions{
			policy: func(p *v1alpha1.RotationPolicy) { p.Spec.AgeThreshold = "auto" },
			pool:   func(np *karpv1.NodePool) { np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("1h") },
		})
		Eventually(policyCondition("infeasible", "Feasible"), timeout).Should(And(reason("FatalFindings"), HaveField("Message", ContainSubstring("AgeThresholdNotPositive"))))
		Eventually(policyCondition("infeasible", "Ready"), timeout).Should(reason("Accepted"))
		Eventually(scrape("noderotation_window_active", series("infeasible")), timeout).Should(Equal(1.0), "the window is open")
		Eventually(scrape("noderotation_candidates", series("infeasible")), timeout).Should(Equal(1.0), "the claim is due")
		Consistently(poolAnnotations("infeasible"), 3*time.Second).ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation))
		Expect(placeholder("infeasible-old")).To(BeNil())
		assertsTransition("infeasible", "idle.infeasible")
	})

	It("warns once per acting instance and never starts on a static NodePool", func() { staticSpec("static") })

	It("does not start without spec.limits headroom for the placeholder, and warns once per acting instance", func() { headroomSpec("headroom") })

	It("does not start when no claim is eligible: the only due claim is opted out by an operator", func() {
		createClaim(fk.Claim{Pool: "nocand", Name: "nocand-opted-out", Zone: "zone-a"})
		mark(fk.NodeName("nocand-opted-out"), func(n *corev1.Node) {
			n.Annotations = map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true"}
		})
		createPool("nocand", v1alpha1.SurgeSpec{}, nil)
		assertsTransition("nocand", "idle.no-candidate")
		Eventually(scrape("noderotation_candidates", series("nocand")), timeout).Should(Equal(0.0))
		Consistently(poolAnnotations("nocand"), 3*time.Second).ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation))
		Expect(getNode(fk.NodeName("nocand-opted-out")).Annotations).NotTo(HaveKey(v1alpha1.AnnotationDoNotDisruptOwned))
		Expect(placeholder("nocand-opted-out")).To(BeNil())
	})

	It("rotates a claim too close to its deadline surge-less when the fallback is enabled", func() {
		createClaim(fk.Claim{Pool: "fallback", Name: "fallback-old", Zone: "zone-a", ExpireAfter: "1h"})
		createPool("fallback", v1alpha1.SurgeSpec{ReadyTimeout: "5m", ForcefulFallback: v1alpha1.ForcefulFallback{Enabled: true}}, nil)
		Eventually(claimDeleting("fallback-old"), timeout).Should(BeTrue())
		a := getPool("fallback").Annotations
		Expect(a).To(And(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, "fallback-old"),
			HaveKeyWithValue(v1alpha1.AnnotationRotationMode, "forceful-fallback"),
			HaveKeyWithValue(v1alpha1.AnnotationActiveRotationState, "draining"), HaveKey(v1alpha1.AnnotationDrainingAt)))
		Expect(claimAnnotations("fallback-old")()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "draining"))
		Expect(placeholder("fallback-old")).To(BeNil(), "surge-less: no placeholder")
		Eventually(eventCount("fallback", "ForcefulFallback"), timeout).Should(BeNumerically("==", 1))
		Eventually(scrape("noderotation_forceful_fallback_total", series("fallback")), timeout).Should(Equal(1.0))
		assertsTransition("fallback", "idle.start-forceful-fallback")
		Expect(karpenter.Finalize(ctx, "fallback-old")).To(Succeed())
		Eventually(noRotationKeys("fallback"), timeout).Should(BeEmpty())
		Expect(getPool("fallback").Annotations).To(HaveKey(v1alpha1.AnnotationLastRotationAt))
		Eventually(eventCount("fallback", "RotationCompleted"), timeout).Should(BeNumerically("==", 1))
		Consistently(eventCount("fallback", "RotationCompleted"), 2*time.Second).Should(BeNumerically("==", 1), "one release, one announcement, across instances")
	})

	It("holds starts for cooldownAfter after a success (gate A) and failurePause after a failure (gate B)", func() {
		createClaim(fk.Claim{Pool: "gates", Name: "gates-old", Zone: "zone-a"})
		now := clock()
		createPoolWith("gates", poolOptions{surge: v1alpha1.SurgeSpec{CooldownAfter: "1h"}, createdWith: map[string]string{v1alpha1.AnnotationLastRotationAt: rfc3339(now)}})
		Consistently(poolAnnotations("gates"), 2*time.Second).ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation))
		assertsTransition("gates", "idle.gated")
		annotatePool("gates", map[string]string{v1alpha1.AnnotationLastRotationAt: "", v1alpha1.AnnotationLastFailureAt: rfc3339(now)})
		Consistently(poolAnnotations("gates"), 2*time.Second).ShouldNot(HaveKey(v1alpha1.AnnotationActiveRotation))
		annotatePool("gates", map[string]string{v1alpha1.AnnotationLastFailureAt: rfc3339(now.Add(-2 * time.Hour))})
		Eventually(poolAnnotations("gates"), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, "gates-old"))
	})
})

var _ = Describe("in-flight edges", func() {
	It("rolls a pending rotation back when its policy is deleted, announcing GovernanceLost once", func() {
		createClaim(fk.Claim{Pool: "lost", Name: "lost-old", Zone: "zone-a"})
		createPool("lost", v1alpha1.SurgeSpec{ReadyTimeout: "5m"}, nil)
		Eventually(placeholderExists("lost-old"), timeout).Should(BeTrue())
		Eventually(frozen(fk.NodeName("lost-old"), "lost-old"), timeout).Should(BeTrue())
		Expect(env.Client.Delete(ctx, &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "lost"}})).To(Succeed())
		Eventually(noRotationKeys("lost"), timeout).Should(BeEmpty())
		Eventually(placeholderExists("lost-old"), timeout).Should(BeFalse())
		Eventually(unfrozen(fk.NodeName("lost-old")), timeout).Should(BeTrue())
		Eventually(uncordoned(fk.NodeName("lost-old")), timeout).Should(BeTrue())
		Eventually(claimAnnotations("lost-old"), timeout).ShouldNot(HaveKey(v1alpha1.AnnotationState))
		Eventually(eventCount("lost", "GovernanceLost"), timeout).Should(BeNumerically("==", 1))
		Eventually(scrape("noderotation_candidates", series("lost")), timeout).Should(Equal(-1.0), "a pool that lost its policy has its series removed")
		Consistently(eventCount("lost", "GovernanceLost"), 2*time.Second).Should(BeNumerically("==", 1))
		assertsTransition("lost", "pending.governance-lost")
	})

	It("rolls back an anchored draining or failed claim of an ungoverned pool", func() {
		createClaim(fk.Claim{Pool: "lost-draining", Name: "lost-draining-old", Zone: "zone-a", Annotations: map[string]string{v1alpha1.AnnotationState: "draining"}})
		createPoolWith("lost-draining", poolOptions{noPolicy: true, annotations: map[string]string{v1alpha1.AnnotationActiveRotation: "lost-draining-old", v1alpha1.AnnotationActiveRotationState: "draining"}})
		createClaim(fk.Claim{Pool: "lost-failed", Name: "lost-failed-old", Zone: "zone-a", Annotations: map[string]string{
			v1alpha1.AnnotationState: "failed", v1alpha1.AnnotationFailedAt: rfc3339(time.Now()), v1alpha1.AnnotationRetryCount: "1"}})
		createPoolWith("lost-failed", poolOptions{noPolicy: true, annotations: map[string]string{v1alpha1.AnnotationActiveRotation: "lost-failed-old"}})
		for _, pool := range []string{"lost-draining", "lost-failed"} {
			Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
			Eventually(eventCount(pool, "GovernanceLost"), timeout).Should(BeNumerically("==", 1))
		}
		Expect(claimExists("lost-draining-old")()).To(BeTrue(), "an ungoverned pool's claim is never deleted")
		Expect(claimDeleting("lost-draining-old")()).To(BeFalse())
		Eventually(claimAnnotations("lost-draining-old"), timeout).ShouldNot(HaveKey(v1alpha1.AnnotationState), "draining → none: the claim is not stranded in draining")
		Expect(claimAnnotations("lost-failed-old")()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "failed"), "backoff annotations kept")
		Expect(claimAnnotations("lost-failed-old")()).To(And(HaveKey(v1alpha1.AnnotationFailedAt), HaveKeyWithValue(v1alpha1.AnnotationRetryCount, "1")))
		Consistently(func() []int32 {
			return []int32{eventCount("lost-draining", "GovernanceLost")(), eventCount("lost-failed", "GovernanceLost")()}
		},
			2*time.Second).Should(Equal([]int32{1, 1}), "announced once across instances")
		assertsTransition("lost-draining", "draining.governance-lost")
		assertsTransition("lost-failed", "failed.governance-lost")
	})

	It("re-issues the delete of a draining claim after a crash between the state write and the delete", func() {
		createClaim(fk.Claim{Pool: "crash", Name: "crash-old", Zone: "zone-a", Annotations: map[string]string{v1alpha1.AnnotationState: "draining"}})
		createPool("crash", v1alpha1.SurgeSpec{}, map[string]string{v1alpha1.AnnotationActiveRotation: "crash-old", v1alpha1.AnnotationActiveRotationState: "draining"})
		Eventually(claimDeleting("crash-old"), timeout).Should(BeTrue())
		assertsTransition("crash", "draining.delete-claim")
		By("holding the anchor and the mirror while Karpenter drains")
		assertsTransition("crash", "draining.wait")
		Consistently(poolAnnotations("crash"), 2*time.Second).Should(And(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, "crash-old"),
			HaveKeyWithValue(v1alpha1.AnnotationActiveRotationState, "draining"), Not(HaveKey(v1alpha1.AnnotationLastRotationAt))))
		Expect(karpenter.Finalize(ctx, "crash-old")).To(Succeed())
		Eventually(noRotationKeys("crash"), timeout).Should(BeEmpty())
		Expect(getPool("crash").Annotations).To(HaveKey(v1alpha1.AnnotationLastRotationAt), "the mirror says draining: success")
	})

	It("flags a stuck drain and keeps the gate held", func() {
		createClaim(fk.Claim{Pool: "stuck", Name: "stuck-old", Zone: "zone-a", Annotations: map[string]string{v1alpha1.AnnotationState: "draining"}})
		createClaim(fk.Claim{Pool: "stuck", Name: "stuck-next", Zone: "zone-a"})
		Expect(env.Client.Delete(ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "stuck-old"}})).To(Succeed())
		createPool("stuck", v1alpha1.SurgeSpec{}, map[string]string{v1alpha1.AnnotationActiveRotation: "stuck-old", v1alpha1.AnnotationActiveRotationState: "draining"})
		// The skew moves every instance's clock: it may drive only this
		// spec's pool. Every spec deletes its pools when it ends, so no
		// other governed pool exists while it is in force.
		pools := &karpv1.NodePoolList{}
		Expect(env.Client.List(ctx, pools)).To(Succeed())
		for _, p := range pools.Items {
			Expect(p.Name).To(BeElementOf("stuck", warmupPool), "no other spec's pool is left for the skew to drive")
		}
		advanceClock(time.Hour + 3*time.Minute) // past tGP (1h) + buffer (2m)
		DeferCleanup(func() { skew.Store(0) })  // other specs compare stamps with server timestamps
		// A skewed clock is no event: without one the next pass comes at
		// draining.wait's 30 s requeue. A label on the pool is one.
		pokePool("stuck")
		assertsTransition("stuck", "draining.stuck")
		Eventually(scrape("noderotation_drain_stuck", series("stuck")), timeout).Should(Equal(1.0))
		Consistently(poolAnnotations("stuck"), 2*time.Second).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, "stuck-old"))
		Expect(placeholder("stuck-next")).To(BeNil(), "the serial gate is never released by a stuck drain")
		Expect(karpenter.Finalize(ctx, "stuck-old")).To(Succeed())
		Eventually(poolAnnotations("stuck"), timeout).ShouldNot(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, "stuck-old"))
	})

	It("retries a failed claim whose backoff has elapsed and releases one still inside it", func() {
		old := rfc3339(clock().Add(-3 * time.Hour))
		createClaim(fk.Claim{Pool: "retry", Name: "retry-old", Zone: "zone-a", Annotations: map[string]string{
			v1alpha1.AnnotationState: "failed", v1alpha1.AnnotationFailedAt: old, v1alpha1.AnnotationRetryCount: "1"}})
		createPool("retry", v1alpha1.SurgeSpec{ReadyTimeout: "5m", FailurePause: "0s"}, map[string]string{v1alpha1.AnnotationActiveRotation: "retry-old"})
		Eventually(claimAnnotations("retry-old"), timeout).Should(And(HaveKeyWithValue(v1alpha1.AnnotationState, "pending"), HaveKey(v1alpha1.AnnotationStartedAt)))
		assertsTransition("retry", "failed.retry")

		By("a claim failed a minute ago with retry-count 3: escalated backoff 4h, so the anchor is released")
		createClaim(fk.Claim{Pool: "backoff", Name: "backoff-old", Zone: "zone-a", Annotations: map[string]string{
			v1alpha1.AnnotationState: "failed", v1alpha1.AnnotationFailedAt: rfc3339(clock().Add(-time.Minute)), v1alpha1.AnnotationRetryCount: "3"}})
		createPool("backoff", v1alpha1.SurgeSpec{FailurePause: "0s"}, map[string]string{v1alpha1.AnnotationActiveRotation: "backoff-old", v1alpha1.AnnotationLastFailureAt: rfc3339(clock().Add(-2 * time.Hour))})
		Eventually(noRotationKeys("backoff"), timeout).Should(BeEmpty())
		Expect(getPool("backoff").Annotations[v1alpha1.AnnotationLastFailureAt]).To(Equal(claimAnnotations("backoff-old")()[v1alpha1.AnnotationFailedAt]), "max(pool, claim failed-at)")
		Expect(claimAnnotations("backoff-old")()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "failed"))
		assertsTransition("backoff", "failed.release")
	})

	It("marks an anchored failed claim expired when it is deleted, and cleans up an anchored expired one", func() {
		createClaim(fk.Claim{Pool: "failed-exp", Name: "failed-exp-old", Zone: "zone-a", Annotations: map[string]string{
			v1alpha1.AnnotationState: "failed", v1alpha1.AnnotationFailedAt: rfc3339(time.Now()), v1alpha1.AnnotationRetryCount: "1"}})
		Expect(env.Client.Delete(ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "failed-exp-old"}})).To(Succeed())
		createPool("failed-exp", v1alpha1.SurgeSpec{}, map[string]string{v1alpha1.AnnotationActiveRotation: "failed-exp-old"})
		Eventually(claimAnnotations("failed-exp-old"), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationState, "expired"))
		Eventually(noRotationKeys("failed-exp"), timeout).Should(BeEmpty())
		Eventually(scrape("noderotation_completed_total", series("failed-exp", "outcome", "expired")), timeout).Should(Equal(1.0))
		assertsTransition("failed-exp", "failed.force-expiry")

		By("an anchored expired claim whose placeholder and frozen nodes a crash left behind")
		rec, err := recorder.Start(watcher)
		Expect(err).NotTo(HaveOccurred())
		defer rec.Stop()
		createClaim(fk.Claim{Pool: "expired", Name: "expired-old", Zone: "zone-a", Annotations: map[string]string{v1alpha1.AnnotationState: "expired"}})
		oldNode, surgeNode := fk.NodeName("expired-old"), "node-expired-surge-host"
		Expect(env.Client.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: surgeNode, Labels: map[string]string{karpv1.NodePoolLabelKey: "expired"}}})).To(Succeed())
		for _, n := range []string{oldNode, surgeNode} {
			mark(n, func(n *corev1.Node) {
				if n.Labels == nil {
					n.Labels = map[string]string{}
				}
				n.Labels[v1alpha1.LabelSurgeFor] = "expired-old"
				n.Annotations = map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true", v1alpha1.AnnotationDoNotDisruptOwned: "true"}
			})
		}
		Expect(env.Client.Create(ctx, surge.Placeholder{Namespace: controllerNS, PriorityClass: priorityClass,
			Pool:  &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "expired"}},
			Claim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "expired-old"}}}.Build())).To(Succeed())
		// Anchored from its creation, so the debris is the anchored
		// rotation's (never another claim's stranded artefacts, which
		// idle.repair-stranded would repair instead); the expired state is
		// decided without the policy, so no pass can see it ungoverned. The
		// cooldown holds any later start.
		seeded := rfc3339(time.Now())
		createPoolWith("expired", poolOptions{surge: v1alpha1.SurgeSpec{CooldownAfter: "1h"},
			createdWith: map[string]string{v1alpha1.AnnotationLastRotationAt: seeded, v1alpha1.AnnotationActiveRotation: "expired-old"}})
		Eventually(noRotationKeys("expired"), timeout).Should(BeEmpty())
		Eventually(placeholderExists("expired-old"), timeout).Should(BeFalse(), "the placeholder is deleted")
		Eventually(unfrozen(oldNode), timeout).Should(BeTrue(), "the old node is unfrozen")
		Eventually(unfrozen(surgeNode), timeout).Should(BeTrue(), "the surge host is unfrozen")
		By("having cleaned up before the anchor was cleared (after it, the debris would be another rotation's to repair)")
		clearedRV := rec.FirstRV("NodePool", "expired", func(r recorder.Record) bool {
			_, anchored := r.Obj.GetAnnotations()[v1alpha1.AnnotationActiveRotation]
			return !anchored && !recorder.Deleted(r)
		})
		Expect(clearedRV).NotTo(BeZero())
		Expect(rec.FirstRV("Pod", surge.PlaceholderName("expired-old"), recorder.Deleting)).To(And(Not(BeZero()), BeNumerically("<", clearedRV)),
			"the placeholder is deleted before the anchor is cleared")
		for _, n := range []string{oldNode, surgeNode} {
			Expect(rec.FirstRV("Node", n, func(r recorder.Record) bool { return r.Obj.GetLabels()[v1alpha1.LabelSurgeFor] == "" })).
				To(And(Not(BeZero()), BeNumerically("<", clearedRV)), "%s is unfrozen before the anchor is cleared", n)
		}
		assertsTransition("expired", "expired.cleanup")
		Expect(claimAnnotations("expired-old")()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "expired"), "the terminal marker is kept")
		Expect(getPool("expired").Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationLastRotationAt, seeded), "an expiry is no success: last-rotation-at is not rewritten")
		Consistently(scrape("noderotation_completed_total", series("expired", "outcome", "expired")), 2*time.Second).Should(Equal(-1.0), "the metric is not re-emitted")
	})
})

var _ = Describe("the placeholder before the old claim (docs/design.md#deviation-placeholder-first)", func() {
	It("deletes the old NodeClaim only once the placeholder is gone", func() {
		const pool, old, surgeClaim = "lingering", "lingering-old", "lingering-surge"
		createClaim(fk.Claim{Pool: pool, Name: old, Zone: "zone-a"})
		createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "5m", CooldownAfter: "1h"}, nil)
		Eventually(placeholderExists(old), timeout).Should(BeTrue())
		ph := placeholder(old)
		orig := ph.DeepCopy()
		ph.Finalizers = append(ph.Finalizers, "test.noderotation.io/hold") // the placeholder lingers while terminating
		Expect(env.Client.Patch(ctx, ph, client.MergeFrom(orig))).To(Succeed())
		createClaim(fk.Claim{Pool: pool, Name: surgeClaim, Zone: "zone-a"})
		Expect(karpenter.BindAndRun(ctx, placeholder(old), fk.NodeName(surgeClaim))).To(Succeed())

		Eventually(claimAnnotations(old), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationState, "draining"))
		Eventually(func() bool { p := placeholder(old); return p != nil && p.DeletionTimestamp != nil }, timeout).Should(BeTrue())
		Consistently(claimDeleting(old), 3*time.Second).Should(BeFalse(), "the placeholder is still there")
		assertsTransition(pool, "draining.await-placeholder-gone")

		ph = placeholder(old)
		orig = ph.DeepCopy()
		ph.Finalizers = nil
		Expect(env.Client.Patch(ctx, ph, client.MergeFrom(orig))).To(Succeed())
		Eventually(claimDeleting(old), timeout).Should(BeTrue())
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
	})
})

var _ = Describe("the window-missed evaluation", func() {
	It("announces a closed occurrence with work outstanding and no success exactly once", func() {
		createClaim(fk.Claim{Pool: "missed", Name: "missed-old", Zone: "zone-a"})
		opened := rfc3339(time.Now().Add(-time.Hour))
		createPoolWith("missed", poolOptions{closedWindow: true, outstanding: true, annotations: map[string]string{v1alpha1.AnnotationWindowOpenedAt: opened}})
		Eventually(poolAnnotations("missed"), timeout).ShouldNot(HaveKey(v1alpha1.AnnotationWindowOpenedAt))
		Eventually(eventCount("missed", "WindowMissed"), timeout).Should(BeNumerically("==", 1))
		Eventually(scrape("noderotation_window_missed_total", series("missed")), timeout).Should(Equal(1.0))
		Expect(scrape("noderotation_window_active", series("missed"))()).To(Equal(0.0))
		assertsTransition("missed", "window.closed.missed")
		By("then, unstamped and closed, staying quiet: no stamp, no second announcement")
		assertsTransition("missed", "window.closed.quiet")
		Consistently(func() []any {
			return []any{eventCount("missed", "WindowMissed")(), getPool("missed").Annotations[v1alpha1.AnnotationWindowOpenedAt]}
		}, 2*time.Second).Should(Equal([]any{int32(1), ""}), "the clear elects one announcer across instances")
	})

	It("clears the stamp silently after a success in the occurrence, or under a freeze", func() {
		createClaim(fk.Claim{Pool: "settled", Name: "settled-old", Zone: "zone-a"})
		opened := time.Now().Add(-time.Hour)
		createPoolWith("settled", poolOptions{closedWindow: true, outstanding: true, annotations: map[string]string{
			v1alpha1.AnnotationWindowOpenedAt: rfc3339(opened), v1alpha1.AnnotationLastRotationAt: rfc3339(opened.Add(time.Minute))}})
		createClaim(fk.Claim{Pool: "declined", Name: "declined-old", Zone: "zone-a"})
		createPoolWith("declined", poolOptions{closedWindow: true, outstanding: true, annotations: map[string]string{
			v1alpha1.AnnotationWindowOpenedAt: rfc3339(opened), v1alpha1.AnnotationFreeze: rfc3339(time.Now().Add(time.Hour))}})
		for _, pool := range []string{"settled", "declined"} {
			Eventually(poolAnnotations(pool), timeout).ShouldNot(HaveKey(v1alpha1.AnnotationWindowOpenedAt))
			Consistently(eventCount(pool, "WindowMissed"), 2*time.Second).Should(BeZero())
			Expect(scrape("noderotation_window_missed_total", series(pool))()).To(BeNumerically("<=", 0), "not counted as missed")
			assertsTransition(pool, "window.closed.settled")
		}
	})

	It("keeps the stamp while an attempt is in flight after the window closed, and settles the occurrence when it ends", func() {
		const pool, old = "in-flight", "in-flight-old"
		opened := time.Now().Add(-time.Hour)
		createClaim(fk.Claim{Pool: pool, Name: old, Zone: "zone-a", Annotations: map[string]string{v1alpha1.AnnotationState: "draining"}})
		createClaim(fk.Claim{Pool: pool, Name: pool + "-due", Zone: "zone-a"}) // outstanding work: a missed window if the stamp were judged now
		Expect(env.Client.Delete(ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: old}})).To(Succeed())
		createPoolWith(pool, poolOptions{closedWindow: true, outstanding: true, annotations: map[string]string{
			v1alpha1.AnnotationActiveRotation: old, v1alpha1.AnnotationActiveRotationState: "draining",
			v1alpha1.AnnotationWindowOpenedAt: rfc3339(opened)}})

		By("holding the stamp, unjudged, while the drain is in flight")
		Consistently(func() []any {
			return []any{getPool(pool).Annotations[v1alpha1.AnnotationWindowOpenedAt], eventCount(pool, "WindowMissed")()}
		}, 3*time.Second).Should(Equal([]any{rfc3339(opened), int32(0)}))
		assertsTransition(pool, "window.closed.in-flight")
		Expect(scrape("noderotation_candidates", series(pool))()).To(BeNumerically(">=", 1), "work is outstanding")

		By("settling the occurrence once the attempt ends in a success: the stamp is cleared silently")
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(poolAnnotations(pool), timeout).Should(And(HaveKey(v1alpha1.AnnotationLastRotationAt), Not(HaveKey(v1alpha1.AnnotationActiveRotation))))
		Eventually(poolAnnotations(pool), timeout).ShouldNot(HaveKey(v1alpha1.AnnotationWindowOpenedAt))
		Consistently(eventCount(pool, "WindowMissed"), 2*time.Second).Should(BeZero(), "a success in the occurrence: not missed")
	})
})

// openWindow makes a policy's window open around the clock.
func openWindow(name string) {
	p := &v1alpha1.RotationPolicy{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, p)).To(Succeed())
	p.Spec.MaintenanceWindows[0] = v1alpha1.MaintenanceWindow{Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}, Start: "00:00", End: "24:00"}
	Expect(env.Client.Update(ctx, p)).To(Succeed())
}

var _ = Describe("a static NodePool with a rotation anchored before the gate", func() {
	It("still completes an anchored drain, and releases a failed retry instead of retrying it", func() {
		static := func(np *karpv1.NodePool) { np.Spec.Replicas = ptr.To(int64(2)); np.Spec.Limits = nil }
		createClaim(fk.Claim{Pool: "static-drain", Name: "static-drain-old", Zone: "zone-a", Annotations: map[string]string{v1alpha1.AnnotationState: "draining"}})
		createPoolWith("static-drain", poolOptions{pool: static, annotations: map[string]string{
			v1alpha1.AnnotationActiveRotation: "static-drain-old", v1alpha1.AnnotationActiveRotationState: "draining"}})
		Eventually(claimDeleting("static-drain-old"), timeout).Should(BeTrue(), "advance() runs above the static gate")
		assertsTransition("static-drain", "draining.delete-claim")
		Expect(karpenter.Finalize(ctx, "static-drain-old")).To(Succeed())
		Eventually(noRotationKeys("static-drain"), timeout).Should(BeEmpty())
		Expect(getPool("static-drain").Annotations).To(HaveKey(v1alpha1.AnnotationLastRotationAt))

		createClaim(fk.Claim{Pool: "static-retry", Name: "static-retry-old", Zone: "zone-a", Annotations: map[string]string{
			v1alpha1.AnnotationState: "failed", v1alpha1.AnnotationFailedAt: rfc3339(clock().Add(-3 * time.Hour)), v1alpha1.AnnotationRetryCount: "1"}})
		createPoolWith("static-retry", poolOptions{pool: static, surge: v1alpha1.SurgeSpec{FailurePause: "0s"},
			annotations: map[string]string{v1alpha1.AnnotationActiveRotation: "static-retry-old"}})
		Eventually(noRotationKeys("static-retry"), timeout).Should(BeEmpty(), "a retry is a new attempt: the static gate closes it")
		Expect(claimAnnotations("static-retry-old")()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "failed"))
		Expect(placeholder("static-retry-old")).To(BeNil())
	})
})
