package surge

import (
	"reflect"
	"sort"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 7, 3, 38, 0, 0, time.UTC)

// claimAt is a claim created at t0+created, on node (none when empty),
// anchored from t0+started when started is not negative.
func claimAt(name string, created time.Duration, node string, started time.Duration) karpv1.NodeClaim {
	c := karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(created)), Annotations: map[string]string{}}}
	c.Status.NodeName = node
	if started >= 0 {
		c.Annotations[v1alpha1.AnnotationStartedAt] = t0.Add(started).Format(time.RFC3339)
	}
	return c
}

func setOf(m map[string]bool) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The measured case of issue #53: nine claims, four rotations started,
// and Karpenter's four surge claims created before any has a node. All
// four are surge claims, so the base stays nine.
func TestInFlightNodelessSurgeClaimsBeforeAnyNode(t *testing.T) {
	var claims []karpv1.NodeClaim
	for i, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i"} {
		started := time.Duration(-1)
		if i < 4 {
			started = 20 * time.Second
		}
		claims = append(claims, claimAt(n, -time.Hour, "node-"+n, started))
	}
	for _, n := range []string{"s1", "s2", "s3", "s4"} {
		claims = append(claims, claimAt(n, 22*time.Second, "", -1))
	}
	// the old nodes are frozen: each carries its own rotation's marker
	pairs := map[string]string{"node-a": "a", "node-b": "b", "node-c": "c", "node-d": "d"}
	got := setOf(InFlight([]string{"a", "b", "c", "d"}, claims, pairs))
	if want := []string{"s1", "s2", "s3", "s4"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("surge claims = %v, want %v", got, want)
	}
}

func TestInFlightEvidenceAndItsLimits(t *testing.T) {
	annotated := claimAt("a", -time.Hour, "node-a", 10*time.Second)
	annotated.Annotations[v1alpha1.AnnotationSurgeClaim] = "sa"
	claims := []karpv1.NodeClaim{
		annotated,
		claimAt("b", -time.Hour, "node-b", 10*time.Second),
		claimAt("c", -time.Hour, "node-c", 10*time.Second),
		claimAt("d", -time.Hour, "node-d", 10*time.Second),
		claimAt("gone-anchor-surge", 15*time.Second, "node-g", -1),
		claimAt("sa", 12*time.Second, "node-sa", -1),   // named by a's surge-claim
		claimAt("sb", 12*time.Second, "node-sb", -1),   // its node paired with b
		claimAt("old", -time.Hour, "node-old", -1),     // c's placeholder landed on an existing node: absorbed
		claimAt("early", 5*time.Second, "", -1),        // created before d started: the pool's own growth
		claimAt("late", 30*time.Second, "", -1),        // created since d started, no node yet
		claimAt("later", 40*time.Second, "node-l", -1), // a second new claim: d has one already
	}
	// each old node carries its own rotation's surge-for marker (frozen)
	pairs := map[string]string{"node-a": "a", "node-b": "b", "node-c": "c", "node-d": "d", "node-sb": "b", "node-old": "c", "node-g": "gone"}
	got := setOf(InFlight([]string{"a", "b", "c", "d", "gone"}, claims, pairs))
	if want := []string{"late", "sa", "sb"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("surge claims = %v, want %v", got, want)
	}
	// without the pairs, b's, c's and d's hosts are unknown: the claims
	// created since they started go to them, oldest first — the gone
	// rotation's surge claim among them (the base errs low, never high)
	got = setOf(InFlight([]string{"a", "b", "c", "d"}, claims, nil))
	if want := []string{"gone-anchor-surge", "late", "sa", "sb"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("surge claims without pairs = %v, want %v", got, want)
	}
}

// The rotations started first take the oldest unpaired claims, with a
// node or not, and a claim created before a rotation started is never its
// surge claim.
func TestInFlightUnpairedOrder(t *testing.T) {
	claims := []karpv1.NodeClaim{
		claimAt("late-start", -time.Hour, "n1", 50*time.Second),
		claimAt("early-start", -time.Hour, "n2", 10*time.Second),
		claimAt("x", 20*time.Second, "", -1),
		claimAt("y", 60*time.Second, "ny", -1), // launched, its placeholder not bound yet
	}
	got := setOf(InFlight([]string{"late-start", "early-start"}, claims, nil))
	if want := []string{"x", "y"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("surge claims = %v, want %v", got, want)
	}
	claims[3] = claimAt("y", 40*time.Second, "ny", -1) // before late-start began
	got = setOf(InFlight([]string{"late-start", "early-start"}, claims, nil))
	if want := []string{"x"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("surge claims = %v, want %v", got, want)
	}
}

// An anchor without a parsable started-at, or one named twice, pairs
// with nothing more than once; an anchored claim is never another's
// surge claim.
func TestInFlightMalformedAnchors(t *testing.T) {
	bad := claimAt("bad", -time.Hour, "n1", -1)
	bad.Annotations[v1alpha1.AnnotationStartedAt] = "yesterday"
	claims := []karpv1.NodeClaim{bad, claimAt("ok", 0, "", 0), claimAt("x", time.Second, "", -1), claimAt("y", time.Second, "", -1)}
	got := setOf(InFlight([]string{"bad", "ok", "ok"}, claims, nil))
	if want := []string{"x"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("surge claims = %v, want %v", got, want)
	}
}
