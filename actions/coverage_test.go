package actions

import (
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// loss-record adds the claim once; a claim already recorded, one the pool
// anchors, or one whose fresh state says its rotation met the deadline is
// not recorded (and not announced).
func TestLossRecord(t *testing.T) {
	deleted := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		pool   map[string]string
		state  string // the claim's state on the fresh read ("gone": no claim)
		out    Outcome
		record string
	}{
		{"recorded once", nil, "", Claimed, "lost@2026-12-03T10:00:00Z"},
		{"a claim already gone is recorded", nil, "gone", Claimed, "lost@2026-12-03T10:00:00Z"},
		{"recorded by another pass", ann(v1alpha1.AnnotationExpiredUnrotated, "lost@2026-12-03T10:00:00Z"), "", Raced, "lost@2026-12-03T10:00:00Z"},
		{"anchored by the pool's fresh copy", ann(v1alpha1.AnnotationActiveRotation, "lost"), "", Raced, ""},
		{"its rotation recorded the expiry", nil, v1alpha1.StateExpired, Raced, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{mkPool(poolName, tc.pool)}
			if tc.state != "gone" {
				objs = append(objs, mkClaim("lost", ann(v1alpha1.AnnotationState, tc.state)))
			}
			e := newEnv(t, objs...)
			targets := e.targets()
			targets.Lost = &Lost{Claim: "lost", DeletedAt: deleted, Deadline: deleted, Why: "because"}
			res, err := step(e.pass(targets), ActionLossRecord, nil)
			if err != nil || res.Outcome != tc.out {
				t.Fatalf("%s %v, want %s", res.Outcome, err, tc.out)
			}
			if (res.Lost != nil) != (tc.out == Claimed) {
				t.Errorf("Lost reported %v for outcome %s", res.Lost, res.Outcome)
			}
			if got := e.pool(poolName).Annotations[v1alpha1.AnnotationExpiredUnrotated]; got != tc.record || strings.Count(got, "lost@") > 1 {
				t.Errorf("expired-unrotated %q, want %q", got, tc.record)
			}
		})
	}
}
