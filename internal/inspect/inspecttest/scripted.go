// Package inspecttest is the scripted cluster the status and explain tests
// read: NodePools in every state an operator asks about, at a fixed
// instant. The unit tests serve it from controller-runtime's fake client,
// the envtest from a real API server; both compare with the same golden
// files (internal/inspect/testdata).
package inspecttest

import (
	"slices"
	"time"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// Pools expire their claims after 14d with a 30m
// terminationGracePeriod. Under the defaults (readyTimeout 15m,
// cooldownAfter 10m, retryBackoff 30m) a 24/7 policy has P = 1m and a lead
// of 2·1m + 47m = 49m (docs/design.md#age-threshold): a claim is due once
// its deadline is less than 49m away.
// Namespace is the controller's: the placeholders run there.
const Namespace = "nrc-system"

// Now is the instant every view is taken at: Tuesday 2026-12-01 12:00 UTC.
var Now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

const poolE = 14 * 24 * time.Hour

var everyDay = []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

func stamp3339(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func policyFor(name, team string, mods ...func(*v1alpha1.RotationPolicySpec)) *v1alpha1.RotationPolicy {
	p := &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.RotationPolicySpec{
		NodePoolSelector:   metav1.LabelSelector{MatchLabels: map[string]string{"team": team}},
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: everyDay, Start: "00:00", End: "24:00"}},
	}}
	for _, m := range mods {
		m(&p.Spec)
	}
	return p
}

// nodeClass and onDemand are what Karpenter's CRDs require of every pool
// template and claim.
var (
	nodeClass = &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}
	onDemand  = []karpv1.NodeSelectorRequirementWithMinValues{{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}}}
)

func pool(name, team string, kv ...string) *karpv1.NodePool {
	e := poolE
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}, Annotations: map[string]string{}}}
	if team != "" {
		np.Labels["team"] = team
	}
	np.Spec.Template.Spec.NodeClassRef, np.Spec.Template.Spec.Requirements = nodeClass, onDemand
	np.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 30 * time.Minute}
	// Karpenter's CRD defaults it so on a real API server (test/envtest
	// reads the same pools): the in-memory fixtures carry it too
	np.Spec.Disruption.Budgets = []karpv1.Budget{{Nodes: "10%"}}
	for i := 0; i < len(kv); i += 2 {
		np.Annotations[kv[i]] = kv[i+1]
	}
	return np
}

// claim is a Ready claim of pool whose deadline is `left` away, on node
// "node-NAME", with annotations kv.
func claim(name, pool string, left time.Duration, kv ...string) *karpv1.NodeClaim {
	e := poolE
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: pool}, Annotations: map[string]string{},
		CreationTimestamp: metav1.NewTime(Now.Add(left - e)),
	}}
	c.Spec.NodeClassRef, c.Spec.Requirements = nodeClass, onDemand
	c.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
	c.Status.NodeName = "node-" + name
	c.Status.Conditions = []status.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.NewTime(Now.Add(-24 * time.Hour))},
		{Type: karpv1.ConditionTypeInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.NewTime(Now.Add(-24 * time.Hour))}}
	for i := 0; i < len(kv); i += 2 {
		c.Annotations[kv[i]] = kv[i+1]
	}
	return c
}

func nodeOf(c *karpv1.NodeClaim, kv ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.Status.NodeName, Annotations: map[string]string{},
		Labels: map[string]string{corev1.LabelHostname: c.Status.NodeName, karpv1.NodePoolLabelKey: c.Labels[karpv1.NodePoolLabelKey]}}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	for i := 0; i < len(kv); i += 2 {
		n.Annotations[kv[i]] = kv[i+1]
	}
	return n
}

// Scripted is the cluster every golden file reads. Its NodeClaims carry
// the creation times their ages need (CreationTimestamps), which an API
// server would not accept from a client.
func Scripted() []client.Object {
	objs := []client.Object{
		accepted(policyFor("open", "open")),
		policyFor("nightly", "nightly", func(s *v1alpha1.RotationPolicySpec) {
			s.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Timezone: "Europe/Berlin", Days: everyDay, Start: "22:00", End: "02:00"}}
		}),
		policyFor("slow", "slow", func(s *v1alpha1.RotationPolicySpec) { s.Surge.CooldownAfter, s.Surge.FailurePause = "20m", "15m" }),
		policyFor("daytime", "day", func(s *v1alpha1.RotationPolicySpec) {
			s.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: everyDay, Start: "08:00", End: "16:00"}}
		}),
		// an age threshold that leaves no window occurrence before the
		// deadline: a fatal finding
		policyFor("strict", "strict", func(s *v1alpha1.RotationPolicySpec) { s.AgeThreshold = "335h30m" }),
		policyFor("tie-a", "tie"), policyFor("tie-b", "tie"),
		// three rotations at once (docs/design.md#throughput)
		policyFor("wide", "wide", func(s *v1alpha1.RotationPolicySpec) {
			three := intstr.FromInt32(3)
			s.Surge.MaxUnavailable = &three
		}),
		policyFor("pair", "pair", func(s *v1alpha1.RotationPolicySpec) {
			two := intstr.FromInt32(2)
			s.Surge.MaxUnavailable = &two
		}),
		// a window closing at 12:09, a 14m forecast and startCutoff 0s: the
		// window-end gate holds the pool (docs/design.md#window-end)
		policyFor("closing", "closing", func(s *v1alpha1.RotationPolicySpec) {
			s.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: everyDay, Start: "08:00", End: "12:09"}}
			s.Surge.StartCutoff, s.Surge.ProvisioningEstimate, s.Surge.DrainEstimate = "0s", "4m", "10m"
		}),
		// admission cannot know the zones: a policy naming one that does not
		// exist is accepted, and does not resolve
		policyFor("broken", "broken", func(s *v1alpha1.RotationPolicySpec) { s.MaintenanceWindows[0].Timezone = "Mars/Olympus_Mons" }),

		// idle, gate open: a short-lead claim first (its own expireAfter of
		// 30m is shorter than the schedule's lead), two due claims in line,
		// one not due, one that never expires
		pool("ready", "open"),
		claim("ready-a", "ready", 20*time.Minute), claim("ready-b", "ready", 40*time.Minute), claim("ready-c", "ready", 10*24*time.Hour),
		expiringAfter(claim("ready-d", "ready", 0), nil, Now.Add(-20*24*time.Hour)),
		expiringAfter(claim("ready-e", "ready", 0), ptr(30*time.Minute), Now.Add(-20*time.Minute)),
		// held by the cooldown (20m) after a rotation 5m ago
		// (a failure 14m ago holds it only 1m more: the later end counts)
		pool("cooling", "slow", v1alpha1.AnnotationLastRotationAt, stamp3339(Now.Add(-5*time.Minute)),
			v1alpha1.AnnotationLastFailureAt, stamp3339(Now.Add(-14*time.Minute))),
		claim("cooling-a", "cooling", 30*time.Minute),
		// held by the failure pause (15m) after a failure 4m ago
		pool("failing", "slow", v1alpha1.AnnotationLastFailureAt, stamp3339(Now.Add(-4*time.Minute))),
		claim("failing-a", "failing", 30*time.Minute),
		// frozen for 14h while the window is closed: the freeze ends at 02:00
		// UTC, after tonight's window (21:00–01:00 UTC) has closed, so every
		// gate opens with tomorrow's
		pool("frozen-night", "nightly", v1alpha1.AnnotationFreeze, stamp3339(Now.Add(14*time.Hour))),
		claim("frozen-night-a", "frozen-night", 20*time.Hour),
		// a window open 08:00–16:00 UTC
		pool("day", "day"), claim("day-a", "day", 30*time.Minute),
		// a static pool (replicas set) never starts a rotation
		static(pool("static", "open")), claim("static-a", "static", 30*time.Minute),
		// a rotation that has overrun its estimate (and its readyTimeout)
		// (its readyTimeout has run out too: it fails, the failure pause of
		// 15m follows and the failed claim comes back in line)
		pool("overrun", "slow", v1alpha1.AnnotationActiveRotation, "overrun-a"),
		claim("overrun-a", "overrun", 50*time.Minute, v1alpha1.AnnotationState, v1alpha1.StatePending, v1alpha1.AnnotationStartedAt, stamp3339(Now.Add(-40*time.Minute))),
		claim("overrun-b", "overrun", 45*time.Minute),
		placeholder("overrun-a", "overrun"),
		// the anchor written, the claim's state not yet: in flight already
		pool("starting", "open", v1alpha1.AnnotationActiveRotation, "starting-a"),
		claim("starting-a", "starting", 20*time.Minute), claim("starting-b", "starting", 40*time.Minute),
		// a pending claim whose pool lost its anchor: re-adopted
		pool("lost", "open"),
		claim("lost-a", "lost", 30*time.Minute, v1alpha1.AnnotationState, v1alpha1.StatePending, v1alpha1.AnnotationStartedAt, stamp3339(Now.Add(-2*time.Minute))),
		pool("strict", "strict"), claim("strict-a", "strict", time.Hour),
		// frozen by an operator for 2h
		pool("frozen", "open", v1alpha1.AnnotationFreeze, stamp3339(Now.Add(2*time.Hour))),
		claim("frozen-a", "frozen", 30*time.Minute),
		// a rotation in flight for 3m, waiting on its surge node
		pool("busy", "open", v1alpha1.AnnotationActiveRotation, "busy-a"),
		claim("busy-a", "busy", 25*time.Minute, v1alpha1.AnnotationState, v1alpha1.StatePending, v1alpha1.AnnotationStartedAt, stamp3339(Now.Add(-3*time.Minute))),
		claim("busy-b", "busy", 45*time.Minute),
		scheduledOn(placeholder("busy-a", "busy"), "node-busy-surge"),
		// window closed until 22:00 Berlin: a due claim, one in backoff, one
		// opted out, one not Ready
		// an operator's requests (docs/design.md#manual-controls): a claim
		// days from due asked next, a due one skipped past its deadline
		pool("asked", "open"),
		claim("asked-a", "asked", 10*24*time.Hour, v1alpha1.AnnotationRotateNext, "true"),
		claim("asked-b", "asked", 20*time.Minute, v1alpha1.AnnotationSkipUntil, stamp3339(Now.Add(3*time.Hour))),
		pool("closing", "closing"),
		claim("closing-a", "closing", 44*time.Hour), // due (the lead is 2d47m), and tomorrow's window still rotates it
		// two claims lost to Karpenter's expiry recorded: one in the last
		// seven days (counted), one before (not)
		pool("night", "nightly", v1alpha1.AnnotationExpiredUnrotated,
			"night-lost-old@"+stamp3339(Now.Add(-8*24*time.Hour))+",night-lost@"+stamp3339(Now.Add(-2*24*time.Hour))),
		claim("night-a", "night", 3*time.Hour),
		claim("night-b", "night", 2*time.Hour, v1alpha1.AnnotationState, v1alpha1.StateFailed,
			v1alpha1.AnnotationFailedAt, stamp3339(Now.Add(-10*time.Minute)), v1alpha1.AnnotationRetryCount, "1",
			v1alpha1.AnnotationFailureReason, "Unschedulable"),
		claim("night-c", "night", time.Hour),
		notReady(claim("night-d", "night", 4*time.Hour)),
		// window open 08:00–16:00 UTC: two due claims, the one with the
		// earlier deadline on a node whose Pod carries do-not-disrupt —
		// passed over for the other, as tomorrow's window can still take it
		pool("guarded", "day"),
		claim("guarded-a", "guarded", 22*time.Hour), claim("guarded-b", "guarded", 30*time.Hour),
		doNotDisrupt(scheduledOn(workload("batch-job"), "node-guarded-a")),
		pool("tied", "tie"), claim("tied-a", "tied", time.Hour),
		// two of three slots in flight: slot 1 waits on its surge, slot 3
		// drains; slot 2 is free for the next start
		// a budget of its own as wide as its maxUnavailable
		budgets(pool("wide", "wide", v1alpha1.AnnotationActiveRotation, "wide-a", v1alpha1.AnnotationActiveRotationState, v1alpha1.StatePending,
			v1alpha1.Slot(3).Key(v1alpha1.AnnotationActiveRotation), "wide-c", v1alpha1.Slot(3).Key(v1alpha1.AnnotationActiveRotationState), v1alpha1.StateDraining),
			karpv1.Budget{Nodes: "3"}),
		claim("wide-a", "wide", 25*time.Minute, v1alpha1.AnnotationState, v1alpha1.StatePending, v1alpha1.AnnotationStartedAt, stamp3339(Now.Add(-2*time.Minute))),
		claim("wide-b", "wide", 35*time.Minute),
		claim("wide-c", "wide", 30*time.Minute, v1alpha1.AnnotationState, v1alpha1.StateDraining, v1alpha1.AnnotationStartedAt, stamp3339(Now.Add(-6*time.Minute))),
		// both slots in flight, started 2m and 10m ago: the next two starts
		// follow each slot's own end, the older rotation's first
		budgets(pool("pair", "pair", v1alpha1.AnnotationActiveRotation, "pair-a", v1alpha1.AnnotationActiveRotationState, v1alpha1.StatePending,
			v1alpha1.Slot(2).Key(v1alpha1.AnnotationActiveRotation), "pair-b", v1alpha1.Slot(2).Key(v1alpha1.AnnotationActiveRotationState), v1alpha1.StatePending),
			karpv1.Budget{Nodes: "2"}),
		// a due claim held by the pool's business-hours budget of 0 nodes
		// (docs/design.md#disruption-budget), in force until 17:00
		budgets(pool("budgeted", "open"), karpv1.Budget{Nodes: "0", Schedule: ptr("0 9 * * *"), Duration: &metav1.Duration{Duration: 8 * time.Hour}}),
		claim("budgeted-a", "budgeted", 20*time.Minute),
		claim("pair-a", "pair", 25*time.Minute, v1alpha1.AnnotationState, v1alpha1.StatePending, v1alpha1.AnnotationStartedAt, stamp3339(Now.Add(-2*time.Minute))),
		claim("pair-b", "pair", 30*time.Minute, v1alpha1.AnnotationState, v1alpha1.StatePending, v1alpha1.AnnotationStartedAt, stamp3339(Now.Add(-10*time.Minute))),
		claim("pair-c", "pair", 35*time.Minute), claim("pair-d", "pair", 40*time.Minute),
		pool("invalid", "broken"),
		pool("plain", ""), claim("plain-a", "plain", time.Hour),
		// a malformed freeze: undecidable until fixed
		pool("garbled", "open", v1alpha1.AnnotationFreeze, "next tuesday"),
	}
	surge := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-busy-surge", Labels: map[string]string{corev1.LabelHostname: "node-busy-surge", karpv1.NodePoolLabelKey: "busy"}}}
	surge.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	objs = append(objs, surge)
	for _, o := range objs {
		if c, ok := o.(*karpv1.NodeClaim); ok {
			var kv []string
			if c.Name == "night-c" {
				kv = []string{v1alpha1.KarpenterDoNotDisrupt, "true"}
			}
			objs = append(objs, nodeOf(c, kv...))
		}
	}
	return objs
}

// Pools are the scripted NodePools' names, sorted as status lists them.
func Pools() []string {
	var out []string
	for _, o := range Scripted() {
		if p, ok := o.(*karpv1.NodePool); ok {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out
}

// CreationTimestamps maps each scripted NodeClaim to its creation time.
func CreationTimestamps() map[string]metav1.Time {
	out := map[string]metav1.Time{}
	for _, o := range Scripted() {
		if c, ok := o.(*karpv1.NodeClaim); ok {
			out[c.Name] = c.CreationTimestamp
		}
	}
	return out
}

// expiringAfter gives the claim its own expireAfter (nil: Never) and
// creation time.
func expiringAfter(c *karpv1.NodeClaim, e *time.Duration, created time.Time) *karpv1.NodeClaim {
	c.Spec.ExpireAfter = karpv1.NillableDuration{Duration: e}
	c.CreationTimestamp = metav1.NewTime(created)
	return c
}

func ptr[T any](v T) *T { return &v }

func static(np *karpv1.NodePool) *karpv1.NodePool {
	np.Spec.Replicas = ptr(int64(2))
	return np
}

func scheduledOn(p *corev1.Pod, node string) *corev1.Pod {
	p.Spec.NodeName = node
	return p
}

// accepted carries the Ready condition the policy status reconciler writes.
func accepted(p *v1alpha1.RotationPolicy) *v1alpha1.RotationPolicy {
	p.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "governs its pools", LastTransitionTime: metav1.NewTime(Now.Add(-24 * time.Hour))}}
	return p
}

// budgets replaces the pool's default budget.
func budgets(np *karpv1.NodePool, b ...karpv1.Budget) *karpv1.NodePool {
	np.Spec.Disruption.Budgets = b
	return np
}

func notReady(c *karpv1.NodeClaim) *karpv1.NodeClaim {
	c.Status.Conditions[0].Status, c.Status.Conditions[0].Reason = metav1.ConditionFalse, "NodeNotReady"
	return c
}

// workload is a Pod of the controller's namespace (so the scripted
// cluster needs no other) that is not a placeholder.
func workload(name string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name, Labels: map[string]string{"app": name}}}
	p.Spec.Containers = []corev1.Container{{Name: "job", Image: "registry.k8s.io/pause:3.10"}}
	return p
}

func doNotDisrupt(p *corev1.Pod) *corev1.Pod {
	p.Annotations = map[string]string{karpv1.DoNotDisruptAnnotationKey: "true"}
	return p
}

func placeholder(claim, pool string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: "nrc-surge-" + claim,
		Labels: map[string]string{v1alpha1.LabelSurgeFor: claim, v1alpha1.LabelNodePool: pool}}}
	p.Spec.Containers = []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}
	p.Status.Phase = corev1.PodPending
	return p
}

// ExplainedClaims are the claims the explain golden file explains, in its
// order; ExplainedPools the pools.
var (
	ExplainedClaims = []string{"ready-e", "ready-a", "ready-b", "ready-c", "ready-d", "cooling-a", "static-a", "starting-a", "starting-b", "lost-a", "busy-a", "busy-b", "night-a", "night-b", "night-c", "night-d", "asked-a", "asked-b", "closing-a", "guarded-a", "guarded-b", "tied-a", "plain-a", "wide-a", "wide-b", "wide-c", "budgeted-a"}
	ExplainedPools  = []string{"ready", "busy", "night", "frozen-night", "closing", "asked", "guarded", "garbled", "wide", "budgeted"}
)
