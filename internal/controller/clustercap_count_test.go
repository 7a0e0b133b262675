package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// The cap counts the other pools' anchors in the cache, and this
// process's anchor writes until the cache has moved past the copy each
// was locked on.
func TestClusterCapInFlight(t *testing.T) {
	pool := func(name, rv, anchor string) karpv1.NodePool {
		p := karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv, Annotations: map[string]string{}}}
		if anchor != "" {
			p.Annotations[v1alpha1.AnnotationActiveRotation] = anchor
		}
		return p
	}
	c := NewClusterCap(2)
	cached := []karpv1.NodePool{pool("a", "1", "a-1"), pool("b", "5", ""), pool("c", "7", ""), pool("self", "9", "self-1")}
	if n := c.InFlight(cached, "self"); n != 1 {
		t.Errorf("in flight %d, want 1 (a; never self)", n)
	}
	c.Started("b", "5") // anchored on b's copy 5, which the cache still shows
	if n := c.InFlight(cached, "self"); n != 2 {
		t.Errorf("in flight %d, want 2 (a, and b not yet in the cache)", n)
	}
	if n := c.InFlight(cached, "b"); n != 2 {
		t.Errorf("b's own pass counts %d, want 2 (a and self, never b)", n)
	}
	cached[1] = pool("b", "6", "b-1") // the cache caught up
	if n := c.InFlight(cached, "self"); n != 2 {
		t.Errorf("in flight %d, want 2", n)
	}
	cached[1] = pool("b", "8", "") // and the rotation ended
	if n := c.InFlight(cached, "self"); n != 1 {
		t.Errorf("in flight %d after b's release, want 1: a record outlived the cache", n)
	}
	if c.Max() != 2 || NewClusterCap(0).Max() != 0 || (*ClusterCap)(nil).Max() != 0 {
		t.Error("Max")
	}
}
