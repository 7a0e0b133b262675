package controller

import (
	"fmt"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
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
	if _, err := leanNode(n); err != nil {
		t.Fatal(err)
	}
	if _, err := leanClaim(c); err != nil {
		t.Fatal(err)
	}
	if len(n.Labels) != 2 || n.Labels[karpv1.NodePoolLabelKey] != "general" || n.Annotations["a"] != "b" || c.Labels[corev1.LabelArchStable] != "amd64" {
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
