package observe

import (
	"strings"
	"testing"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// The window-end gate (docs/design.md#window-end) on the fixture's pool:
// t_rot_est = 5m + 10m = 15m; the window closes at 12:10, 10m after now.
func TestWindowEnd(t *testing.T) {
	closing := func(cutoff string) *v1alpha1.RotationPolicy {
		spec := alwaysOpen()
		spec.MaintenanceWindows[0].Start, spec.MaintenanceWindows[0].End = "08:00", "12:10"
		spec.Surge.StartCutoff = cutoff
		return rotationPolicy("api", spec)
	}
	cases := []struct {
		name     string
		policy   *v1alpha1.RotationPolicy
		recent   string
		ending   bool
		forecast time.Duration
		learned  bool
		hold     time.Duration
	}{
		{"no cutoff: nothing is held", closing(""), "", false, 15 * time.Minute, false, 0},
		{"cutoff 0: 10m left < 15m", closing("0s"), "", true, 15 * time.Minute, false, 15 * time.Minute},
		{"cutoff 6m: 10m left ≥ 9m", closing("6m"), "", false, 15 * time.Minute, false, 9 * time.Minute},
		{"learned from three rotations: the longest, 9m, fits", closing("0s"), "7m0s,9m0s,8m0s", false, 9 * time.Minute, true, 9 * time.Minute},
		{"learned: a slow one, 12m, does not", closing("0s"), "7m0s,12m0s,8m0s", true, 12 * time.Minute, true, 12 * time.Minute},
		{"two rotations are not enough to learn from", closing("0s"), "7m0s,8m0s", true, 15 * time.Minute, false, 15 * time.Minute},
		{"exactly the hold left: held", closing("5m"), "", true, 15 * time.Minute, false, 10 * time.Minute},
		{"a forecast as long as the occurrence holds nothing", closing("0s"), "7m0s,4h10m0s,8m0s", false, 250 * time.Minute, true, 250 * time.Minute},
		{"open around the clock: never", rotationPolicy("api", func() v1alpha1.RotationPolicySpec {
			s := alwaysOpen()
			s.Surge.StartCutoff = "0s"
			return s
		}()), "", false, 15 * time.Minute, false, 15 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			np := nodePool()
			if c.recent != "" {
				np.Annotations[v1alpha1.AnnotationRecentRotations] = c.recent
			}
			obs := observeNow(t, np, c.policy)
			w := obs.WindowEnd
			if w.Ending != c.ending || w.Forecast != c.forecast || w.Learned != c.learned || w.Hold != c.hold || obs.Snapshot.Pool.WindowEnding != c.ending {
				t.Errorf("window end %+v (snapshot %v), want ending %v forecast %s learned %v hold %s", w, obs.Snapshot.Pool.WindowEnding, c.ending, c.forecast, c.learned, c.hold)
			}
			if w.Ending && w.Left != 10*time.Minute {
				t.Errorf("left %s, want 10m", w.Left)
			}
		})
	}
}

// A garbled record is a Warning naming the key; the forecast falls back.
func TestWindowEndGarbledRecord(t *testing.T) {
	spec := alwaysOpen()
	spec.MaintenanceWindows[0].Start, spec.MaintenanceWindows[0].End = "08:00", "12:10"
	spec.Surge.StartCutoff = "0s"
	obs := observeNow(t, nodePool(poolAnnotations(v1alpha1.AnnotationRecentRotations, "5m,soon,6m,7m")), rotationPolicy("api", spec))
	if !obs.WindowEnd.Ending || obs.WindowEnd.Learned {
		t.Errorf("window end %+v: want the policy's 15m, ending", obs.WindowEnd)
	}
	found := false
	for _, b := range obs.BadAnnotations {
		found = found || b.Key == v1alpha1.AnnotationRecentRotations && b.Object == "NodePool/general" && strings.Contains(b.Error(), "soon")
	}
	if !found {
		t.Errorf("bad annotations %+v", obs.BadAnnotations)
	}
}

// The pool is woken when the gate closes: 15m before the 12:10 close.
func TestNextInstantAtTheStartHold(t *testing.T) {
	spec := alwaysOpen()
	spec.MaintenanceWindows[0].Start, spec.MaintenanceWindows[0].End = "08:00", "12:10"
	spec.Surge.StartCutoff = "0s"
	obs := observeAt(t, now.Add(-10*time.Minute), nodePool(), rotationPolicy("api", spec))
	if want := now.Add(-5 * time.Minute); !obs.NextInstant.Equal(want) {
		t.Errorf("next instant %s, want %s", obs.NextInstant, want)
	}
}

// A due candidate whose deadline comes before the next occurrence could
// rotate it is not held: overrunning this occurrence beats Karpenter's
// expiry. One the next occurrence can still rotate is held.
func TestWindowEndYieldsToTheDeadline(t *testing.T) {
	spec := alwaysOpen()
	spec.MaintenanceWindows[0].Start, spec.MaintenanceWindows[0].End = "08:00", "12:10"
	spec.Surge.StartCutoff = "0s"
	for _, c := range []struct {
		left           time.Duration
		ending, urgent bool
	}{
		{20 * time.Hour, false, true}, // deadline 08:00 tomorrow: before it opens + 15m
		{44 * time.Hour, true, false}, // tomorrow's occurrence still rotates it
		// the same, but a blackout takes tomorrow's occurrence: the next
		// start allowed is the day after's, past the deadline
		{44 * time.Hour, false, true},
	} {
		spec := spec
		if c.urgent && c.left == 44*time.Hour {
			tomorrow := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			spec.Blackouts = []v1alpha1.Blackout{{Start: tomorrow.Format(time.RFC3339), End: tomorrow.Add(24 * time.Hour).Format(time.RFC3339), Reason: "launch"}}
		}
		obs := observeNow(t, nodePool(), rotationPolicy("api", spec), nodeClaim("general-a", c.left, "node-a"), node("node-a"))
		if obs.Candidate() == nil {
			t.Fatalf("deadline in %s: no candidate", c.left)
		}
		if w := obs.WindowEnd; w.Ending != c.ending || w.Urgent != c.urgent {
			t.Errorf("deadline in %s: ending %v urgent %v, want %v %v", c.left, w.Ending, w.Urgent, c.ending, c.urgent)
		}
	}
}

// A blackout longer than the calendar's two-week lookahead after the close
// does not make every candidate urgent: one whose deadline leaves room
// after the blackout is still held.
func TestWindowEndHoldsAcrossALongBlackout(t *testing.T) {
	spec := alwaysOpen()
	spec.MaintenanceWindows[0].Start, spec.MaintenanceWindows[0].End = "08:00", "12:10"
	spec.Surge.StartCutoff = "0s"
	tomorrow := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	spec.Blackouts = []v1alpha1.Blackout{{Start: tomorrow.Format(time.RFC3339), End: tomorrow.Add(30 * 24 * time.Hour).Format(time.RFC3339), Reason: "freeze"}}
	for _, c := range []struct {
		left           time.Duration
		ending, urgent bool
	}{
		{60 * 24 * time.Hour, true, false}, // the first window after the blackout rotates it
		{20 * 24 * time.Hour, false, true}, // its deadline falls inside the blackout
	} {
		// rotate-next makes a claim this far from its deadline the candidate
		obs := observeNow(t, nodePool(), rotationPolicy("api", spec), nodeClaim("general-a", c.left, "node-a", func(c *karpv1.NodeClaim) { c.Annotations[v1alpha1.AnnotationRotateNext] = "true" }), node("node-a"))
		if obs.Candidate() == nil {
			t.Fatalf("deadline in %s: no candidate", c.left)
		}
		if w := obs.WindowEnd; w.Ending != c.ending || w.Urgent != c.urgent {
			t.Errorf("deadline in %s: ending %v urgent %v, want %v %v", c.left, w.Ending, w.Urgent, c.ending, c.urgent)
		}
	}
}
