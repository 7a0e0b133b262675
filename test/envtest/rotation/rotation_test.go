package rotation_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

var _ = Describe("the rotation of one NodePool", func() {
	It("rotates make-before-break: anchor first, freeze and cordon, a sized placeholder, surge host frozen, mirror before the delete, clean completion", func() {
		rec, err := recorder.Start(watcher)
		Expect(err).NotTo(HaveOccurred())
		defer rec.Stop()
		const pool, old, surgeClaim = "happy", "happy-old", "happy-surge"
		oldNode, surgeNode := fk.NodeName(old), fk.NodeName(surgeClaim)
		phName := surge.PlaceholderName(old)

		_, err = karpenter.CreateClaim(ctx, fk.Claim{Pool: pool, Name: old, Zone: "zone-a", CPU: "4"})
		Expect(err).NotTo(HaveOccurred())
		_, err = karpenter.RunPod(ctx, workloadNS, "happy-app-1", oldNode, "1500m")
		Expect(err).NotTo(HaveOccurred())
		_, err = karpenter.RunPod(ctx, workloadNS, "happy-app-2", oldNode, "500m")
		Expect(err).NotTo(HaveOccurred())
		_, err = karpenter.RunPod(ctx, workloadNS, "happy-ds", oldNode, "250m", func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "ds", UID: "ds-uid", Controller: ptr.To(true)}}
		})
		Expect(err).NotTo(HaveOccurred())
		mark := controllerRequests.mark()
		createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "5m", CooldownAfter: "1h"}, nil)
		By("stamping the open window's occurrence once")
		stamp := getPool(pool).Annotations[v1alpha1.AnnotationWindowOpenedAt]
		Expect(time.Parse(time.RFC3339, stamp)).To(BeTemporally("~", time.Now(), time.Minute))
		assertsTransition(pool, "window.open.stamp")

		By("writing the anchor, then claiming the claim pending, freezing and cordoning the old node")
		Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, old))
		assertsTransition(pool, "idle.start")
		Eventually(claimAnnotations(old), timeout).Should(And(HaveKeyWithValue(v1alpha1.AnnotationState, "pending"), HaveKey(v1alpha1.AnnotationStartedAt)))
		Eventually(frozen(oldNode, old), timeout).Should(BeTrue())
		Eventually(cordoned(oldNode), timeout).Should(BeTrue())

		By("creating a placeholder sized to the reschedulable Pods, zone-pinned and tolerating the pool's taints")
		Eventually(placeholderExists(old), timeout).Should(BeTrue())
		ph := placeholder(old)
		Expect(ph.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()).To(BeNumerically("==", 2000), "1500m + 500m; the DaemonSet Pod is excluded")
		Expect(ph.Spec.PriorityClassName).To(Equal(priorityClass))
		Expect(*ph.Spec.PreemptionPolicy).To(Equal(corev1.PreemptNever))
		Expect(*ph.Spec.Priority).To(BeNumerically("==", -10))
		Expect(ph.Spec.NodeSelector).To(HaveKeyWithValue(karpv1.NodePoolLabelKey, pool))
		Expect(ph.Spec.Tolerations).To(ContainElement(corev1.Toleration{Key: poolTaint.Key, Operator: corev1.TolerationOpEqual, Value: poolTaint.Value, Effect: poolTaint.Effect}))
		Expect(ph.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions).To(ContainElement(
			corev1.NodeSelectorRequirement{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}}))
		Expect(ph.OwnerReferences).To(BeEmpty())
		assertsTransition(pool, "pending.create-placeholder")

		By("waiting for the surge: the claim stays pending and undeleted, the old node frozen and cordoned, no drain announced")
		assertsTransition(pool, "pending.await-surge")
		Consistently(func() []any {
			return []any{claimAnnotations(old)()[v1alpha1.AnnotationState], claimDeleting(old)(), frozen(oldNode, old)(), cordoned(oldNode)(),
				getPool(pool).Annotations[v1alpha1.AnnotationActiveRotationState] == "draining"}
		}, 2*time.Second).Should(Equal([]any{"pending", false, true, true, false}), "state, deleting, frozen, cordoned, draining mirror")

		By("Karpenter provisioning a surge node on which the placeholder runs")
		_, err = karpenter.CreateClaim(ctx, fk.Claim{Pool: pool, Name: surgeClaim, Zone: "zone-a", CPU: "4"})
		Expect(err).NotTo(HaveOccurred())
		Expect(karpenter.BindAndRun(ctx, ph, surgeNode)).To(Succeed())

		By("freezing the surge host, writing the draining mirror, deleting the placeholder, then the old NodeClaim")
		Eventually(frozen(surgeNode, old), timeout).Should(BeTrue())
		Eventually(claimDeleting(old), timeout).Should(BeTrue())
		a := getPool(pool).Annotations
		Expect(a).To(HaveKeyWithValue(v1alpha1.AnnotationActiveRotationState, "draining"))
		Expect(a).To(And(HaveKey(v1alpha1.AnnotationDrainingAt), HaveKey(v1alpha1.AnnotationSurgeWait)))
		Expect(claimAnnotations(old)()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "draining"))
		Expect(claimAnnotations(old)()).To(HaveKeyWithValue(v1alpha1.AnnotationSurgeClaim, surgeClaim))
		Expect(placeholder(old)).To(BeNil())
		assertsTransition(pool, "pending.surge-ready", "draining.delete-claim")

		By("holding the anchor and the mirror while Karpenter drains")
		assertsTransition(pool, "draining.wait")
		Expect(getPool(pool).Annotations).To(And(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, old),
			HaveKeyWithValue(v1alpha1.AnnotationActiveRotationState, "draining"), Not(HaveKey(v1alpha1.AnnotationLastRotationAt))))

		By("completing once Karpenter finalizes the old NodeClaim")
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		Expect(getPool(pool).Annotations).To(HaveKey(v1alpha1.AnnotationLastRotationAt))
		Eventually(unfrozen(surgeNode), timeout).Should(BeTrue())
		assertsTransition(pool, "gone.complete")
		By("keeping the occurrence's stamp: written once, never rewritten while the window is open")
		assertsTransition(pool, "window.open.stamped")
		Expect(getPool(pool).Annotations).To(HaveKeyWithValue(v1alpha1.AnnotationWindowOpenedAt, stamp))

		By("having written everything in the order docs/design.md#anchor-protocol and docs/design.md#deviation-placeholder-first demand (resourceVersion order)")
		Eventually(func() int64 {
			return rec.FirstRV("NodePool", pool, recorder.Annotated(v1alpha1.AnnotationLastRotationAt))
		}, timeout).ShouldNot(BeZero())
		anchorRV := rec.FirstRV("NodePool", pool, recorder.AnnotatedWith(v1alpha1.AnnotationActiveRotation, old))
		pendingRV := rec.FirstRV("NodeClaim", old, recorder.AnnotatedWith(v1alpha1.AnnotationState, "pending"))
		createdRV := rec.FirstRV("Pod", phName, recorder.Added)
		surgeFrozenRV := rec.FirstRV("Node", surgeNode, recorder.Labelled(v1alpha1.LabelSurgeFor, old))
		mirrorRV := rec.FirstRV("NodePool", pool, recorder.AnnotatedWith(v1alpha1.AnnotationActiveRotationState, "draining"))
		placeholderGoneRV := rec.FirstRV("Pod", phName, recorder.Deleted)
		deleteRV := rec.FirstRV("NodeClaim", old, recorder.Deleting)
		releaseRV := rec.FirstRV("NodePool", pool, recorder.Annotated(v1alpha1.AnnotationLastRotationAt))
		for _, rv := range []int64{anchorRV, pendingRV, createdRV, surgeFrozenRV, mirrorRV, placeholderGoneRV, deleteRV, releaseRV} {
			Expect(rv).NotTo(BeZero())
		}
		Expect(anchorRV).To(BeNumerically("<", pendingRV), "the anchor is written before any other side effect")
		Expect(pendingRV).To(BeNumerically("<", createdRV))
		Expect(surgeFrozenRV).To(BeNumerically("<", mirrorRV), "the surge host is frozen before the drain is announced")
		Expect(mirrorRV).To(BeNumerically("<", deleteRV), "the draining mirror precedes the delete")
		Expect(placeholderGoneRV).To(BeNumerically("<", deleteRV), "the placeholder is gone before the old claim is deleted (docs/design.md#deviation-placeholder-first)")
		Expect(deleteRV).To(BeNumerically("<", releaseRV), "the anchor is released last")

		By("counting the success and both phase durations once, scraped from /metrics")
		Eventually(scrape("noderotation_completed_total", series(pool, "outcome", "success")), timeout).Should(Equal(1.0))
		Expect(scrape("noderotation_duration_seconds", series(pool, "phase", "drain"))()).To(Equal(1.0))
		Expect(scrape("noderotation_duration_seconds", series(pool, "phase", "surge_wait"))()).To(Equal(1.0))
		Expect(scrape("noderotation_completed_total", series(pool, "outcome", "failure"))()).To(Equal(-1.0))
		Eventually(scrape("noderotation_in_progress", series(pool)), timeout).Should(Equal(0.0))
		Expect(scrape("noderotation_rules_info", map[string]string{"version": rulesVersion()})()).To(Equal(1.0))

		By("costing each instance at most 5 reads of the rotation's objects, and at most 22 writes landed (docs/design.md#cache-based-writes)")
		rs := controllerRequests.touching(mark, pool, old, surgeClaim, oldNode, surgeNode, phName)
		AddReportEntry("requests", describe(rs))
		GinkgoWriter.Printf("rotation requests: reads per instance %v, %d writes landed, %d refused as stale\n", readsByInstance(rs), landedWrites(rs), refusedWrites(rs))
		for instance, n := range readsByInstance(rs) {
			Expect(n).To(BeNumerically("<=", 5), "reads of %s: %v", instance, describe(rs))
		}
		Expect(landedWrites(rs)).To(BeNumerically("<=", 22), "writes: %v", describe(rs))

		By("announcing the start and the completion once, across both controller instances")
		Eventually(eventCount(pool, "RotationCompleted"), timeout).Should(BeNumerically("==", 1))
		Consistently(eventCount(pool, "RotationCompleted"), 2*time.Second).Should(BeNumerically("==", 1))
		Expect(eventCount(pool, "RotationStarted")()).To(BeNumerically("==", 1))

		By("never holding two anchors: the anchor only ever changes between empty and one claim")
		prev := ""
		for _, r := range rec.Sorted() {
			if r.Kind != "NodePool" || r.Obj.GetName() != pool {
				continue
			}
			cur := r.Obj.GetAnnotations()[v1alpha1.AnnotationActiveRotation]
			Expect(prev == "" || cur == "" || cur == prev).To(BeTrue(), "anchor moved from %s to %s", prev, cur)
			prev = cur
		}
	})

	It("rolls back on readyTimeout and reaps the induced surge claim", func() {
		const pool, old, surgeClaim = "rollback", "rollback-old", "rollback-surge"
		_, err := karpenter.CreateClaim(ctx, fk.Claim{Pool: pool, Name: old, Zone: "zone-b"})
		Expect(err).NotTo(HaveOccurred())
		createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "4s"}, nil)
		Eventually(placeholderExists(old), timeout).Should(BeTrue())

		By("Karpenter launching a node for the placeholder, which never becomes ready in time")
		_, err = karpenter.CreateClaim(ctx, fk.Claim{Pool: pool, Name: surgeClaim, Zone: "zone-b"})
		Expect(err).NotTo(HaveOccurred())
		Expect(karpenter.Bind(ctx, placeholder(old), fk.NodeName(surgeClaim))).To(Succeed())

		Eventually(claimAnnotations(old), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationState, "failed"))
		a := claimAnnotations(old)()
		Expect(a).To(And(HaveKeyWithValue(v1alpha1.AnnotationRetryCount, "1"), HaveKey(v1alpha1.AnnotationFailedAt)))
		Expect(a).NotTo(Or(HaveKey(v1alpha1.AnnotationStartedAt), HaveKey(v1alpha1.AnnotationSurgeClaim)))
		Eventually(claimDeleting(surgeClaim), timeout).Should(BeTrue(), "the induced surge claim hosts only the placeholder: reaped")
		Eventually(placeholderExists(old), timeout).Should(BeFalse())
		Eventually(unfrozen(fk.NodeName(old)), timeout).Should(BeTrue())
		Eventually(uncordoned(fk.NodeName(old)), timeout).Should(BeTrue())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		Expect(getPool(pool).Annotations).To(HaveKey(v1alpha1.AnnotationLastFailureAt))
		Expect(getPool(pool).Annotations).NotTo(HaveKey(v1alpha1.AnnotationLastRotationAt))
		Eventually(scrape("noderotation_completed_total", map[string]string{"nodepool": pool, "outcome": "failure"}), timeout).Should(Equal(1.0))
		Consistently(scrape("noderotation_completed_total", map[string]string{"nodepool": pool, "outcome": "failure"}), 2*time.Second).Should(Equal(1.0), "counted once across two racing instances")
		Expect(scrape("noderotation_retry_count", map[string]string{"nodepool": pool})()).To(Equal(1.0))
		Eventually(eventCount(old, "RotationFailed"), timeout).Should(BeNumerically("==", 1))
		assertsTransition(pool, "pending.ready-timeout")
	})

	It("never reaps a surge host that absorbed real Pods", func() {
		const pool, old, surgeClaim = "absorbed", "absorbed-old", "absorbed-surge"
		_, err := karpenter.CreateClaim(ctx, fk.Claim{Pool: pool, Name: old, Zone: "zone-a"})
		Expect(err).NotTo(HaveOccurred())
		createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "4s"}, nil)
		Eventually(placeholderExists(old), timeout).Should(BeTrue())
		_, err = karpenter.CreateClaim(ctx, fk.Claim{Pool: pool, Name: surgeClaim, Zone: "zone-a"})
		Expect(err).NotTo(HaveOccurred())
		Expect(karpenter.Bind(ctx, placeholder(old), fk.NodeName(surgeClaim))).To(Succeed())
		_, err = karpenter.RunPod(ctx, workloadNS, "absorbed-app", fk.NodeName(surgeClaim), "1")
		Expect(err).NotTo(HaveOccurred())

		Eventually(claimAnnotations(old), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationState, "failed"))
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		Consistently(claimDeleting(surgeClaim), 2*time.Second).Should(BeFalse())
		Expect(claimExists(surgeClaim)()).To(BeTrue())
	})

	It("records an early force-expiry: the claim is deleted while pending", func() {
		const pool, old = "early", "early-old"
		_, err := karpenter.CreateClaim(ctx, fk.Claim{Pool: pool, Name: old, Zone: "zone-a"})
		Expect(err).NotTo(HaveOccurred())
		createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "5m"}, nil)
		Eventually(placeholderExists(old), timeout).Should(BeTrue())
		Eventually(frozen(fk.NodeName(old), old), timeout).Should(BeTrue())

		By("Karpenter's expiration deleting the claim")
		Expect(env.Client.Delete(ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: old}})).To(Succeed())
		Eventually(claimAnnotations(old), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationState, "expired"))
		Expect(claimAnnotations(old)()).NotTo(HaveKey(v1alpha1.AnnotationStartedAt))
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		Eventually(placeholderExists(old), timeout).Should(BeFalse())
		Eventually(func() bool {
			n := getNode(fk.NodeName(old))
			return n.Annotations[v1alpha1.KarpenterDoNotDisrupt] == "" && n.Labels[v1alpha1.LabelSurgeFor] == ""
		}, timeout).Should(BeTrue())
		a := getPool(pool).Annotations
		Expect(a).NotTo(Or(HaveKey(v1alpha1.AnnotationLastRotationAt), HaveKey(v1alpha1.AnnotationLastFailureAt)), "expired: no cooldown, no failure pause")
		Eventually(scrape("noderotation_completed_total", map[string]string{"nodepool": pool, "outcome": "expired"}), timeout).Should(Equal(1.0))
		Consistently(scrape("noderotation_completed_total", map[string]string{"nodepool": pool, "outcome": "expired"}), 2*time.Second).Should(Equal(1.0))
		assertsTransition(pool, "pending.force-expiry")
		Expect(karpenter.Finalize(ctx, old)).To(Succeed())
	})

	It("records a late force-expiry: the claim vanished without a draining mirror", func() {
		const pool, old = "late", "late-vanished"
		createClaim(fk.Claim{Pool: pool, Name: old, Zone: "zone-a"})
		createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "1h"}, nil)
		Eventually(placeholderExists(old), timeout).Should(BeTrue(), "a pending rotation")
		By("the claim vanishing between two passes: its finalizer dropped, then deleted — no pass can see it deleting")
		nc := &karpv1.NodeClaim{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: old}, nc)).To(Succeed())
		release(nc)
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		a := getPool(pool).Annotations
		Expect(a).NotTo(HaveKey(v1alpha1.AnnotationLastRotationAt), "no mirror: expired, not success")
		Expect(a).NotTo(HaveKey(v1alpha1.AnnotationLastFailureAt), "expired: no failure pause")
		By("recording it as an expiry, once across both instances, and not as a success")
		Eventually(scrape("noderotation_completed_total", series(pool, "outcome", "expired")), timeout).Should(Equal(1.0))
		Consistently(scrape("noderotation_completed_total", series(pool, "outcome", "expired")), 2*time.Second).Should(Equal(1.0))
		Expect(scrape("noderotation_completed_total", series(pool, "outcome", "success"))()).To(Equal(-1.0))
		Expect(scrape("noderotation_duration_seconds", series(pool, "phase", "drain"))()).To(Equal(-1.0), "no drain duration: not a success")
		Expect(eventCount(pool, "RotationCompleted")()).To(BeZero(), "RotationCompleted announces successes only")
		Eventually(placeholderExists(old), timeout).Should(BeFalse(), "its placeholder cleaned up")
		assertsTransition(pool, "gone.complete")
		Expect(coverage.took("pending.force-expiry", pool)()).To(BeFalse(), "late: no pass saw the claim deleting")
	})

	It("holds a pending rotation's escalation under a freeze and resumes when it lifts", func() {
		const pool, old = "freeze", "freeze-old"
		// The claim is anchored before it is pending (a pending claim no
		// anchor names would be re-adopted at once, before the freeze is in
		// place: hardening_test.go); the frozen pending handler claims it.
		_, err := karpenter.CreateClaim(ctx, fk.Claim{Pool: pool, Name: old, Zone: "zone-a"})
		Expect(err).NotTo(HaveOccurred())
		createPoolWith(pool, poolOptions{surge: v1alpha1.SurgeSpec{ReadyTimeout: "5m"},
			createdWith: map[string]string{v1alpha1.AnnotationFreeze: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
			annotations: map[string]string{v1alpha1.AnnotationActiveRotation: old}})
		Eventually(claimAnnotations(old), timeout).Should(And(HaveKeyWithValue(v1alpha1.AnnotationState, "pending"), HaveKey(v1alpha1.AnnotationStartedAt)))
		By("keeping up the bookkeeping: freeze and cordon")
		Eventually(frozen(fk.NodeName(old), old), timeout).Should(BeTrue())
		Eventually(cordoned(fk.NodeName(old)), timeout).Should(BeTrue())
		By("reporting the pool as matched and rotating in the policy status")
		Eventually(func() []int64 {
			p := &v1alpha1.RotationPolicy{}
			Expect(env.Client.Get(ctx, client.ObjectKey{Name: pool}, p)).To(Succeed())
			return []int64{int64(p.Status.MatchedNodePools), int64(p.Status.RotatingNodePools), p.Status.ObservedGeneration - p.Generation}
		}, timeout).Should(Equal([]int64{1, 1, 0}))
		Eventually(policyCondition(pool, "Ready"), timeout).Should(reason("Accepted"))
		Eventually(policyCondition(pool, "Feasible"), timeout).Should(reason("Covered"))

		By("holding the escalation: no placeholder")
		Consistently(placeholderExists(old), 3*time.Second).Should(BeFalse())
		assertsTransition(pool, "pending.freeze-hold")

		By("resuming once the freeze lifts")
		annotatePool(pool, map[string]string{v1alpha1.AnnotationFreeze: ""})
		Eventually(placeholderExists(old), timeout).Should(BeTrue())
		Expect(claimAnnotations(old)()).To(HaveKeyWithValue(v1alpha1.AnnotationState, "pending"))
	})
})

var _ = Describe("candidate selection", func() {
	It("picks the earliest-deadline eligible claim and skips an operator's do-not-disrupt", func() {
		const pool = "select"
		for _, c := range []fk.Claim{
			{Pool: pool, Name: "select-late", Zone: "zone-a", ExpireAfter: "720h"},
			{Pool: pool, Name: "select-opted-out", Zone: "zone-a", ExpireAfter: "1h"},
			{Pool: pool, Name: "select-early", Zone: "zone-a", ExpireAfter: "10h"},
			{Pool: pool, Name: "select-same-deadline-newer", Zone: "zone-a", ExpireAfter: "10h"},
		} {
			_, err := karpenter.CreateClaim(ctx, c)
			Expect(err).NotTo(HaveOccurred())
			time.Sleep(1100 * time.Millisecond) // distinct creationTimestamps (one-second precision)
		}
		n := getNode(fk.NodeName("select-opted-out"))
		orig := n.DeepCopy()
		n.Annotations = map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true"}
		Expect(env.Client.Patch(ctx, n, client.MergeFrom(orig))).To(Succeed())

		createPool(pool, v1alpha1.SurgeSpec{ReadyTimeout: "5m"}, nil)
		Eventually(poolAnnotations(pool), timeout).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, "select-early"))
		Consistently(func() string {
			return getNode(fk.NodeName("select-opted-out")).Annotations[v1alpha1.AnnotationDoNotDisruptOwned]
		}, time.Second).Should(BeEmpty())
	})
})
