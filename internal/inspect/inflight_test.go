package inspect

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// withClaim is the scripted cluster with the named claim changed by edit.
func withClaim(t *testing.T, name string, edit func(*karpv1.NodeClaim)) []client.Object {
	t.Helper()
	objs := scripted()
	for _, o := range objs {
		if c, ok := o.(*karpv1.NodeClaim); ok && c.Name == name {
			edit(c)
			return objs
		}
	}
	t.Fatalf("the scripted cluster has no NodeClaim %s", name)
	return nil
}

// The rotation in flight stays in flight while Karpenter drains it, and
// explain names the instant that ends its phase by the table.
func TestExplainGivesTheInFlightClaimsPhaseBound(t *testing.T) {
	deleted := now.Add(-5 * time.Minute)
	cases := []struct {
		name    string
		edit    func(*karpv1.NodeClaim)
		bounded string
		bound   time.Time
		words   string
	}{
		{"pending, within its readyTimeout", func(*karpv1.NodeClaim) {}, "readyTimeout",
			now.Add(-3*time.Minute + 15*time.Minute), "its surge must be ready by 2026-12-01T12:12:00Z (readyTimeout), or it is rolled back"},
		{"pending, past its readyTimeout", func(c *karpv1.NodeClaim) {
			c.Annotations[v1alpha1.AnnotationStartedAt] = now.Add(-20 * time.Minute).UTC().Format(time.RFC3339)
		}, "readyTimeout", now.Add(-5 * time.Minute), "its readyTimeout ran out at 2026-12-01T11:55:00Z: the next pass rolls it back"},
		{"draining, its delete not yet issued", func(c *karpv1.NodeClaim) {
			c.Annotations[v1alpha1.AnnotationState] = v1alpha1.StateDraining
		}, "", time.Time{}, "its delete is issued next, once no placeholder is left"},
		{"draining, deleted by the rotation", func(c *karpv1.NodeClaim) {
			c.Annotations[v1alpha1.AnnotationState] = v1alpha1.StateDraining
			c.DeletionTimestamp, c.Finalizers = &metav1.Time{Time: deleted}, []string{karpv1.TerminationFinalizer}
		}, "drain bound", deleted.Add(30*time.Minute + schedule.Buffer), "its delete is issued: Karpenter drains it, counted stuck after 2026-12-01T12:27:00Z"},
		{"draining, stuck", func(c *karpv1.NodeClaim) {
			c.Annotations[v1alpha1.AnnotationState] = v1alpha1.StateDraining
			c.DeletionTimestamp, c.Finalizers = &metav1.Time{Time: deleted.Add(-time.Hour)}, []string{karpv1.TerminationFinalizer}
		}, "drain bound", deleted.Add(-time.Hour + 30*time.Minute + schedule.Buffer), "its drain is stuck since 2026-12-01T11:27:00Z"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := inspector(t, withClaim(t, "busy-a", tc.edit)...)
			ex, err := in.ExplainClaim(context.Background(), "busy-a")
			if err != nil {
				t.Fatal(err)
			}
			if ex.Class != census.ClassInFlight || !strings.Contains(ex.Reason, tc.words) {
				t.Errorf("class %s, reason %q; want %s saying %q", ex.Class, ex.Reason, census.ClassInFlight, tc.words)
			}
			if ex.PhaseBounded != tc.bounded || !ex.PhaseBound.Equal(tc.bound) {
				t.Errorf("phase bound %s %v; want %s %v", ex.PhaseBounded, ex.PhaseBound, tc.bounded, tc.bound)
			}
			if f := ex.Pool.InFlight; f == nil || f.Bounded != tc.bounded || !f.Bound.Equal(tc.bound) {
				t.Errorf("status in flight %+v; want its bound %s %v", f, tc.bounded, tc.bound)
			}
		})
	}
}

// A pool that lost its policy mid-rotation: its anchored claim is still the
// rotation in flight — held once its delete is issued, rolled back next
// otherwise — and, with no policy's durations, has no phase bound.
func TestExplainTheRotationOfAPoolThatLostItsPolicy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deleting bool
		words    string
	}{
		{"its delete issued", true, "held: its delete is issued (since 2026-12-01T11:55:00Z), so it cannot be rolled back, and no RotationPolicy selects its NodePool busy; no rotation starts until Karpenter has finished it"},
		{"its delete not issued", false, "no RotationPolicy selects its NodePool busy: the next pass rolls it back (GovernanceLost)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := withClaim(t, "busy-a", func(c *karpv1.NodeClaim) {
				c.Annotations[v1alpha1.AnnotationState] = v1alpha1.StateDraining
				if tc.deleting {
					c.DeletionTimestamp, c.Finalizers = &metav1.Time{Time: now.Add(-5 * time.Minute)}, []string{karpv1.TerminationFinalizer}
				}
			})
			for _, o := range objs {
				if p, ok := o.(*karpv1.NodePool); ok && p.Name == "busy" {
					delete(p.Labels, "team") // no policy selects it any more
				}
			}
			ex, err := inspector(t, objs...).ExplainClaim(context.Background(), "busy-a")
			if err != nil {
				t.Fatal(err)
			}
			if ex.Class != census.ClassInFlight || !strings.Contains(ex.Reason, tc.words) {
				t.Errorf("class %s, reason %q; want %s saying %q", ex.Class, ex.Reason, census.ClassInFlight, tc.words)
			}
			if f := ex.Pool.InFlight; f == nil || !f.Bound.IsZero() || !ex.PhaseBound.IsZero() {
				t.Errorf("in flight %+v, phase bound %v: want the rotation, with no bound", f, ex.PhaseBound)
			}
		})
	}
}
