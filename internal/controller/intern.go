package controller

import "sync"

// internMax bounds the intern table. Label keys and most values repeat
// across the fleet (architecture, zone, instance type, pool, capacity
// type) and fit in it many times over; values unique to one node
// (hostnames) fill it only on a large fleet, after which they are kept
// as decoded. A bound, not eviction: the table never grows past it and
// never drops a string an object still shares.
const internMax = 8192

// interned shares one copy of each label and annotation string between
// the cached Nodes and NodeClaims: the informer decodes every object's
// strings afresh, and of a lean node+claim pair's ~8 KiB about 1.2 KiB is
// the same label text repeated (docs/performance.md#fleet-scale).
var interned = &internTable{m: map[string]string{}, max: internMax}

type internTable struct {
	mu  sync.Mutex
	m   map[string]string
	max int
}

// str returns the table's copy of s, adding s while there is room.
func (t *internTable) str(s string) string {
	if c, ok := t.m[s]; ok {
		return c
	}
	if len(t.m) < t.max {
		t.m[s] = s
	}
	return s
}

// strings returns m rebuilt from the table's copies of its keys and
// values (nil stays nil).
func (t *internTable) strings(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[t.str(k)] = t.str(v)
	}
	return out
}
