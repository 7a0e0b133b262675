package rotation_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	fk "github.com/noderotation/node-rotation-controller/test/fakekarpenter"
)

var ctx = context.Background()

// poolTaint is on every test pool's template: the placeholder must tolerate it.
var poolTaint = corev1.Taint{Key: "dedicated", Value: "rotation-test", Effect: corev1.TaintEffectNoSchedule}

// createPool creates a RotationPolicy selecting test=<name> — open 24/7,
// every claim older than a second due — then the NodePool, and waits until
// the controller has seen the pool governed (it stamps window-opened-at).
// Annotations are added after that, so an anchor is never observed on a
// pool whose policy the cache has not caught up with.
func createPool(name string, surgeSpec v1alpha1.SurgeSpec, annotations map[string]string) *karpv1.NodePool {
	return createPoolWith(name, poolOptions{surge: surgeSpec, annotations: annotations})
}

// poolOptions vary createPoolWith.
type poolOptions struct {
	surge       v1alpha1.SurgeSpec
	annotations map[string]string // added once the pool is observed governed
	// createdWith are on the NodePool from its creation (never an anchor).
	createdWith map[string]string
	noPolicy    bool // the pool is ungoverned
	policy      func(*v1alpha1.RotationPolicy)
	pool        func(*karpv1.NodePool)
	// closedWindow: the policy's window is not open now; the wait is on the
	// policy status instead of the window stamp.
	closedWindow bool
	// wait overrides what createPoolWith waits for before it adds
	// annotations: waitPass (every acting instance has decided on the pool,
	// whatever it saw) or waitNone (return once the objects exist).
	wait waitFor
	// outstanding: wait until the candidates gauge counts a claim of the
	// pool (the claims are past the age threshold: work is outstanding)
	// before the annotations are added.
	outstanding bool
}

type waitFor int

const (
	waitGoverned waitFor = iota // the default: the pool seen governed (and its window stamped when open)
	waitPass
	waitNone
)

func createPoolWith(name string, o poolOptions) *karpv1.NodePool {
	if o.surge.RetryBackoff == "" {
		o.surge.RetryBackoff = "1h"
	}
	if o.surge.FailurePause == "" {
		o.surge.FailurePause = "1h"
	}
	if o.surge.CooldownAfter == "" {
		o.surge.CooldownAfter = "0s"
	}
	window := v1alpha1.MaintenanceWindow{Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}, Start: "00:00", End: "24:00"}
	if o.closedWindow {
		// Two days from now, one minute long: closed for the whole test.
		day := time.Now().UTC().Add(48 * time.Hour).Weekday().String()[:3]
		window = v1alpha1.MaintenanceWindow{Timezone: "UTC", Days: []v1alpha1.Weekday{v1alpha1.Weekday(day)}, Start: "03:00", End: "03:01"}
	}
	pol := &v1alpha1.RotationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.RotationPolicySpec{
			NodePoolSelector:   metav1.LabelSelector{MatchLabels: map[string]string{"test": name}},
			AgeThreshold:       "1s",
			MaintenanceWindows: []v1alpha1.MaintenanceWindow{window},
			Surge:              o.surge,
		},
	}
	if o.policy != nil {
		o.policy(pol)
	}
	if !o.noPolicy {
		Expect(env.Client.Create(ctx, pol)).To(Succeed())
	}
	np := &karpv1.NodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": name}},
		Spec: karpv1.NodePoolSpec{
			Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{
				NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
				Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
					{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a", "zone-b"}},
				},
				Taints:                 []corev1.Taint{poolTaint},
				ExpireAfter:            karpv1.MustParseNillableDuration("720h"),
				TerminationGracePeriod: &metav1.Duration{Duration: time.Hour},
			}},
			Limits: karpv1.Limits{corev1.ResourceCPU: resource.MustParse("100")},
		},
	}
	np.Annotations = o.createdWith
	if o.pool != nil {
		o.pool(np)
	}
	if o.noPolicy {
		np.Annotations = o.annotations
		Expect(env.Client.Create(ctx, np)).To(Succeed())
		return getPool(name)
	}
	Expect(env.Client.Create(ctx, np)).To(Succeed())
	switch {
	case o.wait == waitNone:
		return getPool(name)
	case o.wait == waitPass:
		Eventually(coverage.passed(name, ""), timeout).Should(BeNumerically(">=", acting), "every acting instance has reconciled %s", name)
	case o.closedWindow:
		Eventually(func() int32 {
			p := &v1alpha1.RotationPolicy{}
			_ = env.Client.Get(ctx, client.ObjectKey{Name: name}, p)
			return p.Status.MatchedNodePools
		}, timeout).Should(BeNumerically("==", 1))
	default:
		Eventually(poolAnnotations(name), timeout).Should(HaveKey(v1alpha1.AnnotationWindowOpenedAt))
	}
	if o.wait == waitGoverned {
		// Every acting instance's cache has the policy and the pool.
		Eventually(coverage.passed(name, "governed"), timeout).Should(BeNumerically(">=", acting), "every acting instance has seen %s governed", name)
	}
	if o.outstanding {
		Eventually(scrape("noderotation_candidates", series(name)), timeout).Should(BeNumerically(">=", 1), "work is outstanding on %s", name)
	}
	if len(o.annotations) > 0 {
		annotatePool(name, o.annotations)
	}
	return getPool(name)
}

// annotatePool sets (or, with an empty value, removes) pool annotations.
func annotatePool(name string, set map[string]string) {
	Eventually(func() error {
		np := getPool(name)
		orig := np.DeepCopy()
		if np.Annotations == nil {
			np.Annotations = map[string]string{}
		}
		for k, v := range set {
			if v == "" {
				delete(np.Annotations, k)
			} else {
				np.Annotations[k] = v
			}
		}
		return env.Client.Patch(ctx, np, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	}, timeout).Should(Succeed())
}

func getPool(name string) *karpv1.NodePool {
	np := &karpv1.NodePool{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, np)).To(Succeed())
	return np
}

// pokePool labels the pool: an event that brings its next pass now.
func pokePool(name string) {
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"test.noderotation.io/poke":"%d"}}}`, time.Now().UnixNano()))
	Expect(env.Client.Patch(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
}

func poolAnnotations(name string) func() map[string]string {
	return func() map[string]string { return getPool(name).Annotations }
}

func claimAnnotations(name string) func() map[string]string {
	return func() map[string]string {
		nc := &karpv1.NodeClaim{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			return nil
		}
		return nc.Annotations
	}
}

func getClaim(name string) *karpv1.NodeClaim {
	c := &karpv1.NodeClaim{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, c)).To(Succeed())
	return c
}

func getNode(name string) *corev1.Node {
	n := &corev1.Node{}
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, n)).To(Succeed())
	return n
}

func claimExists(name string) func() bool {
	return func() bool {
		return env.Client.Get(ctx, client.ObjectKey{Name: name}, &karpv1.NodeClaim{}) == nil
	}
}

func claimDeleting(name string) func() bool {
	return func() bool {
		nc := &karpv1.NodeClaim{}
		return env.Client.Get(ctx, client.ObjectKey{Name: name}, nc) == nil && nc.DeletionTimestamp != nil
	}
}

// placeholder returns the claim's placeholder Pod, or nil.
func placeholder(claim string) *corev1.Pod {
	p := &corev1.Pod{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: controllerNS, Name: surge.PlaceholderName(claim)}, p); err != nil {
		return nil
	}
	return p
}

func placeholderExists(claim string) func() bool {
	return func() bool { return placeholder(claim) != nil }
}

// frozen reports our freeze on a node: do-not-disrupt with our marker and
// the surge-for pairing.
func frozen(node, claim string) func() bool {
	return func() bool {
		n := getNode(node)
		return n.Annotations[v1alpha1.KarpenterDoNotDisrupt] == "true" &&
			n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned] == "true" && n.Labels[v1alpha1.LabelSurgeFor] == claim
	}
}

// unfrozen reports no trace of the rotation on a node.
func unfrozen(node string) func() bool {
	return func() bool {
		n := getNode(node)
		_, dnd := n.Annotations[v1alpha1.KarpenterDoNotDisrupt]
		_, owned := n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned]
		_, pair := n.Labels[v1alpha1.LabelSurgeFor]
		return !dnd && !owned && !pair
	}
}

func cordoned(node string) func() bool {
	return func() bool {
		n := getNode(node)
		return n.Spec.Unschedulable && n.Annotations[v1alpha1.AnnotationCordoned] == "true"
	}
}

func uncordoned(node string) func() bool {
	return func() bool {
		n := getNode(node)
		_, marker := n.Annotations[v1alpha1.AnnotationCordoned]
		return !n.Spec.Unschedulable && !marker
	}
}

// noRotationKeys reports that no rotation-scoped key is left on the pool.
func noRotationKeys(pool string) func() []string {
	return func() []string {
		var left []string
		for k := range getPool(pool).Annotations {
			// every slot's rotation-scoped keys (docs/design.md#throughput)
			if _, base, ok := v1alpha1.SlotOf(k); ok && base != v1alpha1.AnnotationLastRotationAt {
				left = append(left, k)
			}
		}
		return left
	}
}

const timeout = 20 * time.Second

// eventCount sums the Count of the Events with reason about the object named
// name: with two controller instances, "once" means one in total.
func eventCount(name, reason string) func() int32 {
	return func() int32 {
		list := &corev1.EventList{}
		Expect(env.Client.List(ctx, list)).To(Succeed())
		var n int32
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason {
				n += max(e.Count, 1)
			}
		}
		return n
	}
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// eventCounts lists the Count of each Event object with reason about the
// object named name. Every controller instance has its own event recorder,
// which folds a repeat of its own Event into that Event's Count: so one
// object per instance, each with Count 1, is exactly one announcement per
// instance.
func eventCounts(name, reason string) func() []int32 {
	return func() []int32 {
		list := &corev1.EventList{}
		Expect(env.Client.List(ctx, list)).To(Succeed())
		var out []int32
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason {
				out = append(out, max(e.Count, 1))
			}
		}
		return out
	}
}

// expectAnnouncedOncePerActor asserts that every acting instance announced
// reason on name exactly once, and no more within a few seconds: one Event
// in total with leader election on; one per instance with it off, as the
// deduplication of level-triggered Warnings is per controller process.
func expectAnnouncedOncePerActor(name, reason string) {
	GinkgoHelper()
	Eventually(eventCounts(name, reason), timeout).Should(HaveLen(acting), "one %s Event per acting instance", reason)
	By("making every acting instance pass over the pool again while the condition holds: no repeat")
	for i := 0; i < 3; i++ {
		before := coverage.passCount(name)()
		annotatePool(name, map[string]string{"test.noderotation.io/poke": fmt.Sprint(i)})
		Eventually(coverage.passCount(name), timeout).Should(BeNumerically(">=", before+acting))
	}
	Consistently(eventCounts(name, reason), 3*time.Second).Should(And(HaveLen(acting), HaveEach(BeNumerically("==", 1))),
		"%s announced exactly once by each of the %d acting instance(s)", reason, acting)
}

// traces lists every mark of the controller on the pool, the claims and
// their nodes: noderotation.io/ annotations and labels, our do-not-disrupt,
// a cordon, a placeholder.
func traces(pool string, claims ...string) []string {
	var out []string
	for k := range getPool(pool).Annotations {
		if strings.HasPrefix(k, v1alpha1.Prefix) {
			out = append(out, "NodePool "+pool+": "+k)
		}
	}
	for _, c := range claims {
		for k := range claimAnnotations(c)() {
			if strings.HasPrefix(k, v1alpha1.Prefix) {
				out = append(out, "NodeClaim "+c+": "+k)
			}
		}
		n := getNode(fk.NodeName(c))
		for k := range n.Annotations {
			if strings.HasPrefix(k, v1alpha1.Prefix) || k == v1alpha1.KarpenterDoNotDisrupt {
				out = append(out, "Node "+n.Name+": "+k)
			}
		}
		for k := range n.Labels {
			if strings.HasPrefix(k, v1alpha1.Prefix) {
				out = append(out, "Node "+n.Name+": label "+k)
			}
		}
		if n.Spec.Unschedulable {
			out = append(out, "Node "+n.Name+": cordoned")
		}
		if placeholder(c) != nil {
			out = append(out, "placeholder of "+c)
		}
	}
	sort.Strings(out)
	return out
}
