package controller

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
)

func doNotDisrupt(p *corev1.Pod) *corev1.Pod {
	p.Annotations = map[string]string{v1alpha1.KarpenterDoNotDisrupt: "true"}
	return p
}

// Open 24/7, a due claim is always close to its deadline (the lead is
// K·1m + t_rot), so a blocked one is taken: the start says DrainBlocked on
// the claim, naming the Pod, once — not again on the passes that follow.
func TestDrainBlockedStartWarnsOnce(t *testing.T) {
	w := newWorld(t, nil, nodePool("general"), governing(),
		nodeClaim("general-a", 20*time.Minute, "node-a"), node("node-a"), doNotDisrupt(pod("job", "node-a", "500m")))
	w.reconcile(t, "general")
	if want := []string{"idle.start-drain-blocked", "window.open.stamped", "coverage.kept"}; !reflect.DeepEqual(w.transitions(), want) {
		t.Fatalf("decisions %v, want %v", w.transitions(), want)
	}
	events := w.rec.drain()
	want := "Warning DrainBlocked rotating despite Pods that block Karpenter's drain until the terminationGracePeriod: apps/job (do-not-disrupt); no other claim can go first before its deadline 2026-11-30T12:20:00Z"
	if len(events) != 2 || !strings.HasPrefix(events[0], "Normal RotationStarted") || events[1] != want {
		t.Fatalf("events %q, want RotationStarted then %q", events, want)
	}
	if c, ok := w.rec.objs[1].(*karpv1.NodeClaim); !ok || c.Name != "general-a" {
		t.Errorf("DrainBlocked recorded on %T, want the claim", w.rec.objs[1])
	}
	if n := len(w.linesWith("rotation started on a node whose drain is blocked")); n != 1 {
		t.Errorf("%d DrainBlocked log lines, want 1", n)
	}
	for range 3 {
		w.reconcile(t, "general")
	}
	for _, e := range w.rec.drain() {
		if strings.Contains(e, "DrainBlocked") {
			t.Errorf("said again on a later pass: %s", e)
		}
	}
}

// With a window, a due claim may be days from its deadline: the blocked
// one, whose last usable window opens tomorrow, is passed over for the
// next, and the gauge counts it by reason.
func TestDrainBlockedCandidateIsPassedOver(t *testing.T) {
	pol := governing()
	pol.Spec.MaintenanceWindows = []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: everyDay, Start: "00:00", End: "23:00"}}
	w := newWorld(t, nil, nodePool("general"), pol,
		nodeClaim("general-a", 30*time.Hour, "node-a"), node("node-a"), doNotDisrupt(pod("job", "node-a", "500m")),
		nodeClaim("general-b", 40*time.Hour, "node-b"), node("node-b"))
	w.reconcile(t, "general")
	np := get(t, w.api, "general", "", &karpv1.NodePool{})
	if got := np.Annotations[v1alpha1.AnnotationActiveRotation]; got != "general-b" {
		t.Fatalf("anchor %q, want general-b: general-a's drain is blocked and tomorrow's window can still take it", got)
	}
	if w.transitions()[0] != "idle.start" {
		t.Errorf("decisions %v", w.transitions())
	}
	for reason, want := range map[string]float64{"do-not-disrupt": 1, "pdb": 0} {
		if got, ok := gaugeSeries(t, metrics.DrainBlocked, "general", "reason", reason); !ok || got != want {
			t.Errorf("drain_blocked_nodes{reason=%s} = %v (found %v), want %v", reason, got, ok, want)
		}
	}
}

// The surge-less start of a blocked claim says DrainBlocked too.
func TestForcefulFallbackStartOfABlockedClaimSaysDrainBlocked(t *testing.T) {
	pol := governing()
	pol.Spec.Surge.ForcefulFallback.Enabled = true
	w := newWorld(t, nil, nodePool("general"), pol,
		nodeClaim("general-a", 20*time.Minute, "node-a"), node("node-a"), doNotDisrupt(pod("job", "node-a", "500m")))
	w.reconcile(t, "general")
	if w.transitions()[0] != "idle.start-forceful-fallback" {
		t.Fatalf("decisions %v", w.transitions())
	}
	var said []string
	for _, e := range w.rec.drain() {
		said = append(said, strings.Fields(e)[1])
	}
	if !slices.Contains(said, "ForcefulFallback") || !slices.Contains(said, "DrainBlocked") {
		t.Errorf("events %v, want ForcefulFallback and DrainBlocked", said)
	}
}
