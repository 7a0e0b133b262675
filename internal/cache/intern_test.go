package cache

import (
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// decoded returns a copy of s in memory of its own, as a JSON decoder
// hands each object its own strings.
func decoded(s string) string { return string([]byte(s)) }

func sameMemory(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// Two cached objects decoded apart hold one copy of the label text they
// share, and keep every label and annotation as they were.
func TestLeanObjectsShareLabelStrings(t *testing.T) {
	labels := func() map[string]string {
		return map[string]string{decoded(karpv1.NodePoolLabelKey): decoded("general"), decoded(corev1.LabelArchStable): decoded("amd64")}
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels(), Annotations: map[string]string{decoded("a"): decoded("b")}}}
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: labels()}}
	if _, err := LeanNode(n); err != nil {
		t.Fatal(err)
	}
	if _, err := LeanClaim(c); err != nil {
		t.Fatal(err)
	}
	if len(n.Labels) != 2 || n.Labels[karpv1.NodePoolLabelKey] != "general" || n.Annotations["a"] != "b" || c.Labels[karpv1.NodePoolLabelKey] != "general" {
		t.Fatalf("labels changed: node %v %v, claim %v", n.Labels, n.Annotations, c.Labels)
	}
	for k, v := range n.Labels {
		for k2, v2 := range c.Labels {
			if k == k2 && (!sameMemory(k, k2) || !sameMemory(v, v2)) {
				t.Errorf("label %s=%s is held twice", k, v)
			}
		}
	}
}

// The table stops growing at its bound; strings past it are kept as
// decoded, and strings already in it are still shared.
func TestInternTableIsBounded(t *testing.T) {
	tab := &internTable{m: map[string]string{}, max: 3}
	first := tab.strings(map[string]string{decoded("k"): decoded("v")})
	for i := range 10 {
		tab.strings(map[string]string{fmt.Sprintf("host-%d", i): "x"})
	}
	if len(tab.m) > 3 {
		t.Errorf("%d strings in a table bounded at 3", len(tab.m))
	}
	again := tab.strings(map[string]string{decoded("k"): decoded("v")})
	if !sameMemory(first["k"], again["k"]) {
		t.Error("a string in the table is no longer shared once the table is full")
	}
	if tab.strings(nil) != nil {
		t.Error("nil labels became a map")
	}
}

// Sharing outlives a garbage collection: a string decoded after one is
// still the copy the table handed out before. (Go's unique package does
// not do this for plain strings: its canonical copy is dropped once no
// unique.Handle is left, and the cached objects hold strings, not handles —
// docs/performance.md#what-the-cache-keeps.)
func TestSharingOutlivesACollection(t *testing.T) {
	tab := newInternTable(16, 2)
	first := tab.strings(map[string]string{decoded("karpenter.sh/nodepool"): decoded("general")})
	runtime.GC()
	runtime.GC()
	again := tab.strings(map[string]string{decoded("karpenter.sh/nodepool"): decoded("general")})
	if !sameMemory(first["karpenter.sh/nodepool"], again["karpenter.sh/nodepool"]) {
		t.Error("a string decoded after a collection is held twice")
	}
}

func sameMap(a, b map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// A pool's claims decoded apart end up holding one label map and one
// annotation map; a claim whose annotations differ (one in rotation)
// keeps its own, with what it was decoded with.
func TestIdenticalMapsAreShared(t *testing.T) {
	claim := func(name string, annotations map[string]string) *karpv1.NodeClaim {
		return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels:      map[string]string{decoded(karpv1.NodePoolLabelKey): decoded("general"), decoded(corev1.LabelHostname): decoded(name)},
			Annotations: annotations}}
	}
	a := claim("a", map[string]string{decoded("karpenter.sh/nodepool-hash"): decoded("123")})
	b := claim("b", map[string]string{decoded("karpenter.sh/nodepool-hash"): decoded("123")})
	r := claim("r", map[string]string{decoded("karpenter.sh/nodepool-hash"): decoded("123"), decoded(v1alpha1.AnnotationState): decoded("pending")})
	for _, c := range []*karpv1.NodeClaim{a, b, r} {
		if _, err := LeanClaim(c); err != nil {
			t.Fatal(err)
		}
	}
	if !sameMap(a.Labels, b.Labels) || !sameMap(a.Labels, r.Labels) || !sameMap(a.Annotations, b.Annotations) {
		t.Error("a pool's claims hold maps of their own")
	}
	if sameMap(a.Annotations, r.Annotations) || r.Annotations[v1alpha1.AnnotationState] != "pending" || len(r.Annotations) != 2 {
		t.Errorf("the rotating claim's annotations %v are another's", r.Annotations)
	}
	if len(a.Labels) != 1 || a.Labels[karpv1.NodePoolLabelKey] != "general" {
		t.Errorf("labels %v, want the pool's alone", a.Labels)
	}
	// Another pool's claims share their own maps, not the first pool's.
	other := claim("o", map[string]string{decoded("karpenter.sh/nodepool-hash"): decoded("456")})
	other.Labels[karpv1.NodePoolLabelKey] = decoded("batch")
	if _, err := LeanClaim(other); err != nil {
		t.Fatal(err)
	}
	if sameMap(a.Labels, other.Labels) || other.Labels[karpv1.NodePoolLabelKey] != "batch" || other.Annotations["karpenter.sh/nodepool-hash"] != "456" {
		t.Errorf("another pool's claim holds labels %v, annotations %v", other.Labels, other.Annotations)
	}
	// The informer may run the transform again on what it holds: the
	// shared maps come back as they are, unwritten.
	again, err := LeanClaim(a.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	twice, err := LeanClaim(a)
	if err != nil {
		t.Fatal(err)
	}
	if !sameMap(twice.(*karpv1.NodeClaim).Labels, b.Labels) || !sameMap(again.(*karpv1.NodeClaim).Labels, b.Labels) || len(b.Labels) != 1 {
		t.Errorf("a second transform gave labels %v", twice.(*karpv1.NodeClaim).Labels)
	}
}

// Nodes keep annotation maps of their own: a real node's name its own
// address and volumes, so sharing them would only churn the table.
func TestNodesKeepTheirOwnAnnotationMaps(t *testing.T) {
	n1 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{decoded("node.alpha.kubernetes.io/ttl"): decoded("0")}}}
	n2 := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2", Annotations: map[string]string{decoded("node.alpha.kubernetes.io/ttl"): decoded("0")}}}
	for _, n := range []*corev1.Node{n1, n2} {
		if _, err := LeanNode(n); err != nil {
			t.Fatal(err)
		}
	}
	if sameMap(n1.Annotations, n2.Annotations) || n2.Annotations["node.alpha.kubernetes.io/ttl"] != "0" {
		t.Errorf("two nodes share an annotation map %v", n1.Annotations)
	}
}

// keptClaimLabels never writes the map it is given, which may be shared.
func TestKeptClaimLabelsLeavesItsInputAlone(t *testing.T) {
	in := map[string]string{karpv1.NodePoolLabelKey: "general", corev1.LabelHostname: "h"}
	out := keptClaimLabels(in)
	if len(in) != 2 || len(out) != 1 || out[karpv1.NodePoolLabelKey] != "general" {
		t.Errorf("in %v, out %v", in, out)
	}
	kept := map[string]string{karpv1.NodePoolLabelKey: "general", v1alpha1.LabelSurgeFor: "c"}
	if !sameMap(keptClaimLabels(kept), kept) {
		t.Error("a map with nothing to drop was copied")
	}
}

// A full table of maps starts afresh: the maps handed out stay intact,
// and identical maps are shared again from then on.
func TestSharedMapsTableStartsAfreshWhenFull(t *testing.T) {
	tab := newInternTable(16, 2)
	first := tab.shared(map[string]string{"k": "1"})
	tab.shared(map[string]string{"k": "2"})
	tab.shared(map[string]string{"k": "3"}) // full: emptied, then holds this one
	if tab.maps.n > 2 {
		t.Errorf("%d maps in a table bounded at 2", tab.maps.n)
	}
	if first["k"] != "1" || len(first) != 1 {
		t.Errorf("a handed-out map changed: %v", first)
	}
	x, y := tab.shared(map[string]string{"k": "4"}), tab.shared(map[string]string{"k": "4"})
	if !sameMap(x, y) {
		t.Error("identical maps are no longer shared after the table started afresh")
	}
	if m := tab.shared(map[string]string{}); m == nil || len(m) != 0 || tab.shared(nil) != nil {
		t.Error("an empty map is not kept as it was")
	}
}
