package observe

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

func deletedAt(t time.Time) func(*karpv1.NodeClaim) {
	return func(c *karpv1.NodeClaim) {
		c.DeletionTimestamp = &metav1.Time{Time: t}
		c.Finalizers = []string{karpv1.TerminationFinalizer}
	}
}

func observeWith(t *testing.T, m *Memory, at time.Time, objs ...client.Object) *Observation {
	t.Helper()
	o := observerOn(newClient(t, nil, objs...), at)
	o.Memory = m
	obs, err := o.Observe(context.Background(), "general", NoCap)
	if err != nil || obs == nil {
		t.Fatalf("observe: %v, %v", obs, err)
	}
	return obs
}

// A claim Karpenter deleted at its deadline with no rotation in flight is
// lost, named with the class the last pass that saw it alive counted it
// in; a claim deleted before its deadline, one whose rotation was in
// flight, and one the pool records are not.
func TestLostClaims(t *testing.T) {
	m := NewMemory()
	// pass 1: a and b are due (a first), c is not
	observeWith(t, m, now, nodePool(), governing(),
		nodeClaim("general-a", 20*time.Minute, "node-a"), nodeClaim("general-b", 25*time.Minute, "node-b"),
		nodeClaim("general-c", 3*time.Hour, "node-c"), nodeClaim("general-r", 10*time.Minute, "node-r"),
		node("node-a"), node("node-b"), node("node-c"), node("node-r"))
	later := now.Add(40 * time.Minute)
	objs := []client.Object{
		nodePool(poolAnnotations(v1alpha1.AnnotationExpiredUnrotated, "general-r@"+stamp(now.Add(10*time.Minute)))), governing(),
		nodeClaim("general-a", 20*time.Minute, "node-a", inState(v1alpha1.StateDraining), deletedAt(now.Add(21*time.Minute))),
		nodeClaim("general-b", 25*time.Minute, "node-b", deletedAt(now.Add(25*time.Minute))),
		nodeClaim("general-c", 3*time.Hour, "node-c", deletedAt(now.Add(time.Minute))),
		nodeClaim("general-r", 10*time.Minute, "node-r", deletedAt(now.Add(10*time.Minute))), // deleted first
		node("node-a"), node("node-b"), node("node-c"), node("node-r"),
	}
	obs := observeWith(t, m, later, objs...)
	if obs.Lost == nil || obs.Lost.Claim != "general-b" || obs.Snapshot.Lost != "general-b" {
		t.Fatalf("lost %+v, snapshot %q: want general-b", obs.Lost, obs.Snapshot.Lost)
	}
	if want := now.Add(25 * time.Minute); !obs.Lost.Deadline.Equal(want) || !obs.Lost.DeletedAt.Equal(want) {
		t.Errorf("deadline %s deleted %s, want both %s", obs.Lost.Deadline, obs.Lost.DeletedAt, want)
	}
	if !strings.Contains(obs.Lost.Why, "class outranked") {
		t.Errorf("why %q: general-b was due behind general-a at the last pass that saw it", obs.Lost.Why)
	}
	// a controller started after the deletion did not see the claim alive
	fresh := observeWith(t, NewMemory(), later, objs...)
	if fresh.Lost == nil || !strings.Contains(fresh.Lost.Why, "did not see it") {
		t.Errorf("a restarted controller: %+v", fresh.Lost)
	}
	// past the span expired-unrotated keeps, a deletion is not looked at
	if old := observeWith(t, NewMemory(), now.Add(v1alpha1.LossesKept+25*time.Minute), objs...); old.Lost != nil {
		t.Errorf("a deletion older than the record keeps: %+v", old.Lost)
	}
}

// The candidate a pass did not start is remembered with the gate that held
// it, and a malformed record is a Warning naming the pool and key.
func TestLostCandidateAndMalformedRecord(t *testing.T) {
	m := NewMemory()
	observeWith(t, m, now, nodePool(poolAnnotations(v1alpha1.AnnotationFreeze, stamp(now.Add(time.Hour)))), governing(),
		nodeClaim("general-a", 20*time.Minute, "node-a"), node("node-a"))
	obs := observeWith(t, m, now.Add(30*time.Minute), nodePool(poolAnnotations(v1alpha1.AnnotationExpiredUnrotated, "garbage")), governing(),
		nodeClaim("general-a", 20*time.Minute, "node-a", deletedAt(now.Add(20*time.Minute))), node("node-a"))
	if obs.Lost == nil || !strings.Contains(obs.Lost.Why, "the pool was frozen") {
		t.Fatalf("lost %+v: want the candidate held by the freeze", obs.Lost)
	}
	if len(obs.BadAnnotations) != 1 || obs.BadAnnotations[0].Key != v1alpha1.AnnotationExpiredUnrotated || obs.BadAnnotations[0].Object != "NodePool/general" {
		t.Errorf("bad annotations %+v", obs.BadAnnotations)
	}
}

// A closed gate holds every eligible claim, not only the one first in
// line: the second due claim of a frozen pool was held by the freeze, not
// outranked.
func TestLostBehindAClosedGate(t *testing.T) {
	m := NewMemory()
	frozen := poolAnnotations(v1alpha1.AnnotationFreeze, stamp(now.Add(time.Hour)))
	observeWith(t, m, now, nodePool(frozen), governing(),
		nodeClaim("general-a", 20*time.Minute, "node-a"), nodeClaim("general-b", 25*time.Minute, "node-b"), node("node-a"), node("node-b"))
	obs := observeWith(t, m, now.Add(30*time.Minute), nodePool(frozen), governing(),
		nodeClaim("general-a", 20*time.Minute, "node-a"), nodeClaim("general-b", 25*time.Minute, "node-b", deletedAt(now.Add(25*time.Minute))),
		node("node-a"), node("node-b"))
	if obs.Lost == nil || obs.Lost.Claim != "general-b" || !strings.Contains(obs.Lost.Why, "the pool was frozen") {
		t.Fatalf("lost %+v: the freeze held general-b", obs.Lost)
	}
}
