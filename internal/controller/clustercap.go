package controller

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// ClusterCap bounds the rotations in flight across the cluster
// (-max-concurrent-rotations, docs/design.md#cluster-cap). The count is
// the pools whose cached copy carries an anchor, plus the pools this
// process anchored that the cache has not caught up with yet. The
// reconciler holds the cap's lock for every pass of a pool without an
// anchor, so two pools' starts never judge the count at once: the pass
// that anchors records the start before the next one counts.
type ClusterCap struct {
	// max is the most rotations in flight at once; 0 is no cap.
	max atomic.Int64
	// pass serialises the passes that may start a rotation; mu guards own.
	pass sync.Mutex
	mu   sync.Mutex
	// own are the pools this process anchored, each with the
	// resourceVersion of the copy its anchor write was locked on: while
	// the cache still shows that copy, it has not seen the anchor.
	own map[string]string
}

// NewClusterCap is a cap of max rotations in flight; 0 is no cap.
func NewClusterCap(max int) *ClusterCap {
	c := &ClusterCap{}
	c.SetMax(max)
	return c
}

// Max is the cap; 0 is none.
func (c *ClusterCap) Max() int {
	if c == nil {
		return 0
	}
	return int(c.max.Load())
}

// SetMax changes the cap (tests change it while the controller runs).
func (c *ClusterCap) SetMax(n int) { c.max.Store(int64(n)) }

// Lock serialises the passes that may start a rotation.
func (c *ClusterCap) Lock() { c.pass.Lock() }

// Unlock ends such a pass.
func (c *ClusterCap) Unlock() { c.pass.Unlock() }

// Started records that this process anchored pool on the copy at
// resourceVersion rv, before the pass that did lets the next one count.
func (c *ClusterCap) Started(pool, rv string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.own == nil {
		c.own = map[string]string{}
	}
	c.own[pool] = rv
}

// InFlight counts the rotations in flight in pools other than self, from
// the cached NodePools and this process's starts the cache has not shown.
func (c *ClusterCap) InFlight(pools []karpv1.NodePool, self string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := observe.AnchoredElsewhere(pools, self)
	for i := range pools {
		p := &pools[i]
		rv, mine := c.own[p.Name]
		switch {
		case mine && p.ResourceVersion != rv:
			delete(c.own, p.Name) // the cache has moved past the anchor write
		case mine && p.Name != self:
			n++ // anchored here on this very copy: the cache has not shown it
		}
	}
	return n
}

// count is the cap as a pass of pool self sees it, from the cached
// NodePools: observe.NoCap when no cap is set.
func (c *ClusterCap) count(ctx context.Context, cache client.Reader, self string) (observe.Cap, error) {
	if c.Max() <= 0 {
		return observe.NoCap, nil
	}
	pools := &karpv1.NodePoolList{}
	if err := cache.List(ctx, pools); err != nil {
		return observe.Cap{}, fmt.Errorf("listing NodePools for the cluster cap: %w", err)
	}
	return observe.Cap{Max: c.Max(), InFlight: c.InFlight(pools.Items, self)}, nil
}
