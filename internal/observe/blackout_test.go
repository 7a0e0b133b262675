package observe

import (
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// A blackout in force sets the snapshot's blackout; one that overlapped
// the stamped occurrence sets blackoutSinceStamp; its edges wake the pool
// (docs/design.md#manual-controls).
func TestBlackoutSnapshot(t *testing.T) {
	withBlackout := func(start, end time.Time) *v1alpha1.RotationPolicy {
		spec := alwaysOpen()
		spec.Blackouts = []v1alpha1.Blackout{{Start: stamp(start), End: stamp(end)}}
		return rotationPolicy("api", spec)
	}
	stamped := poolAnnotations(v1alpha1.AnnotationWindowOpenedAt, stamp(now.Add(-4*time.Hour)))
	for _, c := range []struct {
		name        string
		start, end  time.Time
		in, since   bool
		nextInstant time.Time
	}{
		{"in force", now.Add(-time.Hour), now.Add(time.Hour), true, true, now.Add(time.Hour)},
		{"over, inside the occurrence", now.Add(-3 * time.Hour), now.Add(-2 * time.Hour), false, true, time.Time{}},
		{"over before the occurrence opened", now.Add(-6 * time.Hour), now.Add(-5 * time.Hour), false, false, time.Time{}},
		{"ahead", now.Add(2 * time.Hour), now.Add(3 * time.Hour), false, false, now.Add(2 * time.Hour)},
	} {
		t.Run(c.name, func(t *testing.T) {
			obs := observeNow(t, nodePool(stamped), withBlackout(c.start, c.end))
			p := obs.Snapshot.Pool
			if p.Blackout != c.in || p.BlackoutSinceStamp != c.since {
				t.Errorf("blackout %v since stamp %v, want %v %v", p.Blackout, p.BlackoutSinceStamp, c.in, c.since)
			}
			if !obs.NextInstant.Equal(c.nextInstant) {
				t.Errorf("next instant %s, want %s", obs.NextInstant, c.nextInstant)
			}
		})
	}
}

// Judged at a late pass after the close, a blackout that began after the
// stamped occurrence closed does not excuse it; one inside it does.
func TestBlackoutAfterTheCloseIsNoExcuse(t *testing.T) {
	for _, c := range []struct {
		start time.Time
		since bool
	}{
		{now.Add(-30 * time.Minute), false}, // 11:30, after the 11:00 close
		{now.Add(-90 * time.Minute), true},  // 10:30, inside 08:00–11:00
	} {
		spec := alwaysOpen()
		spec.MaintenanceWindows[0].Start, spec.MaintenanceWindows[0].End = "08:00", "11:00"
		spec.Blackouts = []v1alpha1.Blackout{{Start: stamp(c.start), End: stamp(now.Add(time.Hour))}}
		obs := observeNow(t, nodePool(poolAnnotations(v1alpha1.AnnotationWindowOpenedAt, stamp(now.Add(-4*time.Hour)))), rotationPolicy("api", spec))
		if obs.Snapshot.Pool.BlackoutSinceStamp != c.since {
			t.Errorf("blackout from %s: since stamp %v, want %v", c.start, obs.Snapshot.Pool.BlackoutSinceStamp, c.since)
		}
	}
}
