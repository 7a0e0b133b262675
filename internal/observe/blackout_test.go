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
