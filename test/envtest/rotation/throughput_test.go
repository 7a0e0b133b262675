package rotation_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

// Several rotations at once (docs/design.md#throughput): with
// maxUnavailable 3, both instances racing on the pool, three rotations run
// side by side and never a fourth — no fourth anchor (the watch sees every
// write), placeholder or old claim deleting — and each rotation is
// announced once.
var _ = Describe("several rotations of one pool at once", func() {
	It("rotates five due claims three at a time under two racing instances: never a fourth anchor, placeholder or delete", func() {
		const pool = "three"
		olds := []string{"three-a", "three-b", "three-c", "three-d", "three-e"}
		for _, c := range olds {
			createClaim(fk.Claim{Pool: pool, Name: c, Zone: "zone-a"})
		}
		serve := serveSurges(pool)
		mark := controllerRequests.mark()
		createPoolWith(pool, poolOptions{surge: v1alpha1.SurgeSpec{MaxUnavailable: ptr.To(intstr.FromInt32(3)), ReadyTimeout: "1h"}, pool: budget("3")})

		By("rotating every old claim")
		Eventually(func() []string {
			var left []string
			for _, c := range olds {
				if claimExists(c)() {
					left = append(left, c)
				}
			}
			return left
		}, 3*timeout).Should(BeEmpty())
		By("letting the rotations in flight end (the surge claims are kept out by skip-until, so none starts after the last old claim)")
		Eventually(noRotationKeys(pool), 2*timeout).Should(BeEmpty())
		most := serve.stop()

		Expect(anchors.mostAnchored(pool)).To(Equal(3), "three rotations ran at once, and never a fourth (every write of the pool seen)")
		Expect(most.placeholders).To(BeNumerically("<=", 3), "placeholders at once")
		Expect(most.deleting).To(BeNumerically("<=", 3), "old claims deleting at once")
		Expect(most.placeholders).To(BeNumerically(">=", 2), "placeholders side by side (sampled)")
		for _, c := range olds {
			Expect(announcedFor(pool, "RotationStarted", c)).To(Equal(int32(1)), "RotationStarted for %s", c)
			Expect(announcedFor(pool, "RotationCompleted", c)).To(Equal(int32(1)), "RotationCompleted for %s", c)
		}
		Eventually(scrape("noderotation_max_unavailable", series(pool)), timeout).Should(Equal(3.0))

		By("costing no more per rotation than one at a time does: at most 5 reads per instance and 22 writes landed (docs/design.md#cache-based-writes)")
		names := []string{pool}
		for _, c := range append(olds, serve.claims()...) {
			names = append(names, c, fk.NodeName(c), surge.PlaceholderName(c))
		}
		rs := controllerRequests.touching(mark, names...)
		perRotation := float64(landedWrites(rs)) / float64(len(olds))
		GinkgoWriter.Printf("rotation requests, %d rotations three at a time: reads per instance %v, %d writes landed (%.1f per rotation), %d refused as stale\n",
			len(olds), readsByInstance(rs), landedWrites(rs), perRotation, refusedWrites(rs))
		for instance, n := range readsByInstance(rs) {
			Expect(float64(n)/float64(len(olds))).To(BeNumerically("<=", 5), "reads of %s: %v", instance, describe(rs))
		}
		Expect(perRotation).To(BeNumerically("<=", 22), "writes: %v", describe(rs))
	})
})

// announcedFor sums the Counts of the reason's Events on the pool that
// name claim: once in total, whichever instance's pass earned it.
func announcedFor(pool, reason, claim string) int32 {
	list := &corev1.EventList{}
	Expect(env.Client.List(ctx, list)).To(Succeed())
	var n int32
	for _, e := range list.Items {
		if e.InvolvedObject.Name == pool && e.Reason == reason && strings.Contains(e.Message, "NodeClaim "+claim+" ") {
			n += max(e.Count, 1)
		}
	}
	return n
}

// surgeServer plays Karpenter for a pool with several rotations in flight:
// each placeholder waiting unbound gets a surge claim and node of its own
// and runs there; each deleting claim is finalized. It samples the most
// placeholders and deleting claims it saw at once. The surge claims carry
// an hour's skip-until: the pool's age threshold is a second, so without it
// they would be rotated in turn and the pool would never come to rest (a
// freeze would not do: it holds a pending rotation where it stands).
type surgeServer struct {
	done chan struct{}
	wg   sync.WaitGroup
	most struct{ placeholders, deleting int }
	n    atomic.Int64
	seen map[string]time.Time // when each placeholder was first seen unbound
	pool string
}

// provisionDelay is how long a placeholder waits before its surge claim
// appears, as it would for a real cloud's node: it keeps the rotations'
// placeholders side by side long enough for the 50 ms samples to see it.
const provisionDelay = time.Second

func serveSurges(pool string) *surgeServer {
	s := &surgeServer{done: make(chan struct{}), seen: map[string]time.Time{}, pool: pool}
	s.wg.Add(1)
	go func() {
		defer GinkgoRecover()
		defer s.wg.Done()
		for {
			select {
			case <-s.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			s.round(pool)
		}
	}()
	DeferCleanup(func() { s.stop() })
	return s
}

func (s *surgeServer) round(pool string) {
	pods := &corev1.PodList{}
	if env.Client.List(ctx, pods, client.InNamespace(controllerNS), client.MatchingLabels{v1alpha1.LabelNodePool: pool}) != nil {
		return
	}
	s.most.placeholders = max(s.most.placeholders, len(pods.Items))
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			continue
		}
		if _, ok := s.seen[string(p.UID)]; !ok {
			s.seen[string(p.UID)] = time.Now()
		}
		if time.Since(s.seen[string(p.UID)]) < provisionDelay {
			continue
		}
		name := fmt.Sprintf("%s-s%d", pool, s.n.Add(1))
		skip := map[string]string{v1alpha1.AnnotationSkipUntil: rfc3339(time.Now().Add(time.Hour))}
		if _, err := karpenter.CreateClaim(ctx, fk.Claim{Pool: pool, Name: name, Zone: "zone-a", Annotations: skip}); err != nil {
			continue
		}
		_ = karpenter.BindAndRun(ctx, p, fk.NodeName(name))
	}
	claims := &karpv1.NodeClaimList{}
	if env.Client.List(ctx, claims, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}) != nil {
		return
	}
	deleting := 0
	for i := range claims.Items {
		if c := &claims.Items[i]; c.DeletionTimestamp != nil {
			deleting++
			_ = karpenter.Finalize(ctx, c.Name)
		}
	}
	s.most.deleting = max(s.most.deleting, deleting)
}

// claims are the surge claims it created.
func (s *surgeServer) claims() []string {
	out := make([]string, s.n.Load())
	for i := range out {
		out[i] = fmt.Sprintf("%s-s%d", s.pool, i+1)
	}
	return out
}

// stop ends the serving (once) and returns the most seen at once.
func (s *surgeServer) stop() struct{ placeholders, deleting int } {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.wg.Wait()
	return s.most
}
