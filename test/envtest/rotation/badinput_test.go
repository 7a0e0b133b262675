package rotation_test

import (
	"fmt"
	"maps"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// garbageKeys are the annotations the table's facts read, on the pool and
// on the anchored claim.
var garbageKeys = []struct {
	key     string
	onClaim bool
}{
	{v1alpha1.AnnotationActiveRotation, false}, {v1alpha1.AnnotationActiveRotationState, false}, {v1alpha1.AnnotationRotationMode, false},
	{v1alpha1.AnnotationFreeze, false}, {v1alpha1.AnnotationLastRotationAt, false}, {v1alpha1.AnnotationLastFailureAt, false},
	{v1alpha1.AnnotationWindowOpenedAt, false},
	{v1alpha1.AnnotationState, true}, {v1alpha1.AnnotationStartedAt, true}, {v1alpha1.AnnotationFailedAt, true}, {v1alpha1.AnnotationRetryCount, true},
}

// rollbackBound is well inside the onLost requeue (30 s) and the backstop
// (1 min): a rollback done within it ran on the passes the writes and the
// policy's deletion brought, not on a requeue that waited out an
// undecidable pass.
const rollbackBound = 20 * time.Second

// rolledBack: no rotation key on the pool, no placeholder, the old node
// neither frozen nor cordoned.
func rolledBack(pool, claim string) func() []string {
	return func() []string {
		var left []string
		if keys := noRotationKeys(pool)(); len(keys) > 0 {
			left = append(left, fmt.Sprint("pool keys ", keys))
		}
		if placeholderExists(claim)() {
			left = append(left, "placeholder")
		}
		if !unfrozen(fk.NodeName(claim))() {
			left = append(left, "frozen")
		}
		if !uncordoned(fk.NodeName(claim))() {
			left = append(left, "cordoned")
		}
		return left
	}
}

func garble(pool, claim, key string, onClaim bool) {
	GinkgoHelper()
	if onClaim {
		annotateClaim(claim, map[string]string{key: "garbage"})
	} else {
		if key == v1alpha1.AnnotationActiveRotation {
			// the spec's own write, as an operator's edit; then, while the
			// pool is governed, the controller's gone.superseded
			anchors.expectOverwrite(pool, "garbage", claim)
		}
		annotatePool(pool, map[string]string{key: "garbage"})
	}
}

var _ = Describe("bad input never blocks a cleanup", func() {
	It("rolls back a pending rotation whose policy is deleted, whatever annotation holds garbage", func() {
		By("starting a pending rotation per annotation, then garbling it")
		pools := map[string]string{}
		for i, g := range garbageKeys {
			pool := fmt.Sprintf("garbage-pending-%d", i)
			startPending(pool, pool+"-old")
			garble(pool, pool+"-old", g.key, g.onClaim)
			pools[pool] = g.key
		}
		By("deleting every policy, then seeing each rotation rolled back")
		for pool := range pools {
			losePolicy(pool)
		}
		for pool, key := range pools {
			Eventually(rolledBack(pool, pool+"-old"), rollbackBound).Should(BeEmpty(), "%s garbled on %s", key, pool)
		}
		assertsTransition(fmt.Sprintf("garbage-pending-%d", stateKey()), "invalid.governance-lost")
	})

	It("rolls back a draining or failed rotation of a pool no policy governs, whatever annotation holds garbage", func() {
		pools := map[string]string{}
		for _, state := range []string{v1alpha1.StateDraining, v1alpha1.StateFailed} {
			for i, g := range garbageKeys {
				if g.key == v1alpha1.AnnotationActiveRotation {
					// a garbled anchor names no rotation: on a pool no policy
					// governs, the one it named is the startup sweep's
					// (docs/design.md#hardening); the pending spec above
					// garbles it while governed
					continue
				}
				pool := fmt.Sprintf("garbage-%s-%d", state, i)
				claim := pool + "-old"
				createRotationByHand(pool, claim, state, g.key, g.onClaim)
				pools[pool] = g.key
			}
		}
		for pool, key := range pools {
			Eventually(rolledBack(pool, pool+"-old"), rollbackBound).Should(BeEmpty(), "%s garbled on %s", key, pool)
			Expect(claimDeleting(pool+"-old")()).To(BeFalse(), "an ungoverned pool's claim is never deleted (%s)", pool)
		}
	})

	It("holds a pool that lost its policy while its claim, its state garbled, is deleting, and releases it once the claim is gone", func() {
		const pool, claim = "garbage-deleting", "garbage-deleting-old"
		createClaim(fk.Claim{Pool: pool, Name: claim, Zone: "zone-a", Annotations: map[string]string{v1alpha1.AnnotationState: "garbage"}})
		Expect(env.Client.Delete(ctx, &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim}})).To(Succeed())
		Eventually(claimDeleting(claim), timeout).Should(BeTrue())
		createPoolWith(pool, poolOptions{noPolicy: true, annotations: map[string]string{
			v1alpha1.AnnotationActiveRotation: claim, v1alpha1.AnnotationActiveRotationState: v1alpha1.StateDraining}})
		assertsTransition(pool, "invalid.governance-lost-hold")
		Consistently(poolAnnotations(pool), 2*time.Second).Should(HaveKeyWithValue(v1alpha1.AnnotationActiveRotation, claim), "a delete that was issued cannot be rolled back: the gate holds")
		Expect(karpenter.Finalize(ctx, claim)).To(Succeed())
		Eventually(noRotationKeys(pool), timeout).Should(BeEmpty())
		assertsTransition(pool, "gone.governance-lost")
	})
})

// stateKey is the index of the claim's state annotation in garbageKeys.
func stateKey() int {
	for i, g := range garbageKeys {
		if g.key == v1alpha1.AnnotationState {
			return i
		}
	}
	panic("no state key")
}

// createRotationByHand leaves what a rotation in state leaves on a pool no
// policy governs — the anchored claim in that state (with a failure record
// when failed), the pool's anchor and mirror, its placeholder, the old node
// frozen and cordoned — with garbage in key, the pool created last, so no
// pass sees it before its artefacts and its garbage are in place.
func createRotationByHand(pool, claim, state, key string, onClaim bool) {
	GinkgoHelper()
	a := map[string]string{v1alpha1.AnnotationState: state}
	mirror := state
	if state == v1alpha1.StateFailed {
		a[v1alpha1.AnnotationFailedAt], a[v1alpha1.AnnotationRetryCount] = rfc3339(time.Now()), "1"
		mirror = v1alpha1.StatePending
	}
	p := map[string]string{v1alpha1.AnnotationActiveRotation: claim, v1alpha1.AnnotationActiveRotationState: mirror}
	if onClaim {
		a[key] = "garbage"
	} else {
		if key == v1alpha1.AnnotationActiveRotation {
			anchors.expectOverwrite(pool, "garbage")
		}
		p[key] = "garbage"
	}
	createClaim(fk.Claim{Pool: pool, Name: claim, Zone: "zone-a", Annotations: a})
	mark(fk.NodeName(claim), func(n *corev1.Node) {
		n.Labels[v1alpha1.LabelSurgeFor] = claim
		n.Spec.Unschedulable = true
		n.Annotations = map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true", v1alpha1.AnnotationDoNotDisruptOwned: "true", v1alpha1.AnnotationCordoned: "true"}
	})
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool, Labels: map[string]string{"test": pool}}}
	ph := surge.Placeholder{Namespace: controllerNS, PriorityClass: priorityClass, Pool: np,
		Claim: &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: claim}}}.Build()
	Expect(env.Client.Create(ctx, ph)).To(Succeed())
	createPoolWith(pool, poolOptions{noPolicy: true, annotations: p})
}

// annotateClaim sets annotations on a NodeClaim, conditionally on the copy
// read (a pass may write the claim meanwhile: then read it again).
func annotateClaim(name string, set map[string]string) {
	GinkgoHelper()
	Eventually(func() error {
		nc := &karpv1.NodeClaim{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return err
		}
		orig := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		maps.Copy(nc.Annotations, set)
		return env.Client.Patch(ctx, nc, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	}, timeout).Should(Succeed())
}
