package observe

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// InducedClaim: the claim named by surge-claim, else the placeholder host's
// claim, else a node-less claim of the pool created since started-at —
// and never one that predates the attempt.
func TestInducedClaim(t *testing.T) {
	started := now.Add(-5 * time.Minute)
	after, before := now.Add(-4*time.Minute), now.Add(-time.Hour)
	subject := func(mods ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
		return nodeClaim("general-a", 40*time.Minute, "node-a", append([]func(*karpv1.NodeClaim){inState(v1alpha1.StatePending)}, mods...)...)
	}
	named := func(n string) func(*karpv1.NodeClaim) { return claimAnnotations(v1alpha1.AnnotationSurgeClaim, n) }
	cases := []struct {
		name        string
		subject     *karpv1.NodeClaim
		others      []client.Object
		placeholder string // the placeholder's node, "" for none
		want        string
	}{
		{"named by surge-claim", subject(startedAt(started), named("general-s")),
			[]client.Object{fresh("general-s", after, "node-s"), fresh("general-n", after, "")}, "", "general-s"},
		{"named, but created before started-at: absorbed, never reaped", subject(startedAt(started), named("general-s")),
			[]client.Object{fresh("general-s", before, "node-s"), fresh("general-n", after, "")}, "", "<nil>"},
		{"named but gone: the host's claim", subject(startedAt(started), named("general-gone")),
			[]client.Object{fresh("general-h", after, "node-h"), node("node-h")}, "node-h", "general-h"},
		{"the placeholder host's claim", subject(startedAt(started)),
			[]client.Object{fresh("general-h", after, "node-h"), node("node-h")}, "node-h", "general-h"},
		{"the host's claim predates the attempt", subject(startedAt(started)),
			[]client.Object{fresh("general-h", before, "node-h"), fresh("general-n", after, ""), node("node-h")}, "node-h", "<nil>"},
		{"a node-less claim created since started-at", subject(startedAt(started)),
			[]client.Object{fresh("general-n", after, "")}, "", "general-n"},
		{"created in the very second of started-at", subject(startedAt(started)),
			[]client.Object{fresh("general-n", started, "")}, "", "general-n"},
		{"a node-less claim created before started-at", subject(startedAt(started)),
			[]client.Object{fresh("general-n", before, "")}, "", "<nil>"},
		{"a new claim with a node that does not host the placeholder", subject(startedAt(started)),
			[]client.Object{fresh("general-x", after, "node-x")}, "", "<nil>"},
		{"no started-at", subject(named("general-s")),
			[]client.Object{fresh("general-s", after, "node-s"), fresh("general-n", after, "")}, "", "<nil>"},
		{"malformed started-at", subject(claimAnnotations(v1alpha1.AnnotationStartedAt, "a while ago"), named("general-s")),
			[]client.Object{fresh("general-s", after, "node-s")}, "", "<nil>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := append([]client.Object{nodePool(anchored("general-a")), governing(), c.subject, node("node-a")}, c.others...)
			if c.placeholder != "" {
				objs = append(objs, placeholderPod("general-a", c.placeholder))
			}
			obs := observeNow(t, objs...)
			if got := nameOf(obs.InducedClaim); got != c.want {
				t.Errorf("induced %s, want %s", got, c.want)
			}
		})
	}
	// Without a subject there is nothing induced.
	if got := inducedClaim(&Observation{Claims: []karpv1.NodeClaim{*fresh("general-n", after, "")}}); got != nil {
		t.Errorf("no subject: induced %s", got.Name)
	}
}

// AvoidHostnames: the old node's hostname (its name without the label),
// then the nodes of the other claims due now; never not-due claims, claims
// without a node, or nodes that cannot be read.
func TestAvoidHostnames(t *testing.T) {
	bare := node("node-a", func(n *corev1.Node) { delete(n.Labels, corev1.LabelHostname) })
	obs := observeNow(t, nodePool(), governing(), bare, node("node-b"), node("node-c"), node("node-e"),
		nodeClaim("general-a", 10*time.Minute, "node-a"),
		nodeClaim("general-b", 45*time.Minute, "node-b"),
		nodeClaim("general-c", 2*time.Hour, "node-c"),       // not due
		nodeClaim("general-d", 30*time.Minute, "node-gone"), // node unreadable
		nodeClaim("general-e", 20*time.Minute, "node-e", inState(v1alpha1.StateExpired)),
		nodeClaim("general-f", 15*time.Minute, ""),
	)
	if nameOf(obs.Subject) != "general-a" {
		t.Fatalf("subject %s", nameOf(obs.Subject))
	}
	// general-e is expired, not a candidate, but past its trigger all the same.
	want := []string{"node-a", "host-node-b", "host-node-e"}
	if !reflect.DeepEqual(obs.AvoidHostnames, want) {
		t.Errorf("avoid %v, want %v", obs.AvoidHostnames, want)
	}
}

// NextInstant is the earliest future moment a time-based fact changes.
func TestNextInstant(t *testing.T) {
	daily := alwaysOpen()
	daily.MaintenanceWindows[0] = v1alpha1.MaintenanceWindow{Timezone: "UTC", Days: everyDay, Start: "02:00", End: "06:00"}
	monday := func(h int) time.Time { return time.Date(2026, 11, 30, h, 0, 0, 0, time.UTC) }
	cases := []struct {
		name   string
		at     time.Time
		policy *v1alpha1.RotationPolicy
		pool   *karpv1.NodePool
		claims []client.Object
		want   time.Time
	}{
		{"nothing changes in a 24/7 window", now, governing(), nodePool(), nil, time.Time{}},
		{"the window opens", monday(12), rotationPolicy("api", daily), nodePool(), nil, monday(26)},
		{"the window closes", monday(3), rotationPolicy("api", daily), nodePool(), nil, monday(6)},
		{"the freeze ends", now, governing(), nodePool(poolAnnotations(v1alpha1.AnnotationFreeze, stamp(now.Add(10*time.Minute)))), nil, now.Add(10 * time.Minute)},
		{"a past freeze changes nothing", now, governing(), nodePool(poolAnnotations(v1alpha1.AnnotationFreeze, stamp(now.Add(-time.Minute)))), nil, time.Time{}},
		{"a malformed freeze changes nothing", now, governing(), nodePool(poolAnnotations(v1alpha1.AnnotationFreeze, "tomorrow")), nil, time.Time{}},
		{"the cooldown ends", now, governing(), nodePool(poolAnnotations(v1alpha1.AnnotationLastRotationAt, stamp(now.Add(-4*time.Minute)))), nil, now.Add(6 * time.Minute)},
		{"the failure pause ends", now, governing(), nodePool(poolAnnotations(v1alpha1.AnnotationLastFailureAt, stamp(now.Add(-time.Minute)))), nil, now.Add(9 * time.Minute)},
		{"readyTimeout has elapsed from its first instant past it", now, governing(), nodePool(anchored("general-a")),
			[]client.Object{nodeClaim("general-a", 40*time.Minute, "", inState(v1alpha1.StatePending), startedAt(now.Add(-10*time.Minute)))},
			now.Add(5*time.Minute + time.Nanosecond)},
		{"a drain turns stuck from its first instant past tGP + buffer", now, governing(), nodePool(anchored("general-a")),
			[]client.Object{nodeClaim("general-a", 40*time.Minute, "", inState(v1alpha1.StateDraining), func(c *karpv1.NodeClaim) {
				c.DeletionTimestamp = &metav1.Time{Time: now.Add(-10 * time.Minute)}
				c.Finalizers = []string{"karpenter.sh/termination"}
			})},
			now.Add(30*time.Minute + schedule.Buffer - 10*time.Minute + time.Nanosecond)},
		{"the anchored claim's backoff ends", now, governing(), nodePool(anchored("general-a")),
			[]client.Object{nodeClaim("general-a", 40*time.Minute, "", inState(v1alpha1.StateFailed),
				claimAnnotations(v1alpha1.AnnotationFailedAt, stamp(now.Add(-20*time.Minute))))},
			now.Add(10 * time.Minute)},
		{"a claim becomes due", now, governing(), nodePool(), []client.Object{nodeClaim("general-a", 3*time.Hour, "")}, now.Add(3*time.Hour - lead)},
		{"the earliest of several", now, governing(), nodePool(poolAnnotations(
			v1alpha1.AnnotationFreeze, stamp(now.Add(10*time.Minute)),
			v1alpha1.AnnotationLastRotationAt, stamp(now.Add(-8*time.Minute)),
		)), []client.Object{nodeClaim("general-a", 3*time.Hour, "")}, now.Add(2 * time.Minute)},
		{"an ungoverned pool still sees its freeze end", now, rotationPolicy("batch", daily), func() *karpv1.NodePool {
			np := nodePool(poolAnnotations(v1alpha1.AnnotationFreeze, stamp(now.Add(3*time.Hour))))
			np.Labels["workload"] = "batch-less"
			return np
		}(), nil, now.Add(3 * time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := append([]client.Object{c.pool, c.policy}, c.claims...)
			obs := observeAt(t, c.at, objs...)
			if !obs.NextInstant.Equal(c.want) {
				t.Errorf("next instant %s, want %s", obs.NextInstant, c.want)
			}
		})
	}
}

// A pool in a window that is closed now is observed with WindowOpen false.
func TestObserveWindowClosed(t *testing.T) {
	daily := alwaysOpen()
	daily.MaintenanceWindows[0] = v1alpha1.MaintenanceWindow{Timezone: "UTC", Days: everyDay, Start: "02:00", End: "06:00"}
	obs := observeNow(t, nodePool(), rotationPolicy("api", daily))
	if obs.WindowOpen || obs.Snapshot.Pool.WindowOpen {
		t.Error("the window is closed at noon")
	}
	obs = observeAt(t, now.Add(-8*time.Hour), nodePool(), rotationPolicy("api", daily))
	if !obs.WindowOpen || !obs.Snapshot.Pool.WindowOpen {
		t.Error("the window is open at 04:00")
	}
}
