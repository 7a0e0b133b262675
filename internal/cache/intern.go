package cache

import (
	"hash/maphash"
	"maps"
	"sync"
)

const (
	// internMax bounds the string table. Label keys and most values
	// repeat across the fleet (architecture, zone, instance type, pool,
	// capacity type) and fit in it many times over; values unique to one
	// node (hostnames) fill it only on a large fleet, after which they are
	// kept as decoded. A bound, not eviction: the table never grows past
	// it and never drops a string an object still shares.
	internMax = 8192
	// sharedMapsMax bounds each table of shared parts: whole maps, and
	// the requirements, node classes and allocatables of shared.go. A pool's NodeClaims
	// carry the same labels (the few kept, LeanClaim) and most carry the
	// same annotations, as do its Nodes; maps unique to one object (a
	// claim in rotation, a node's own address) take a slot each, so a
	// full table is emptied and fills again rather than stopping: maps
	// already handed out stay with their objects, and the fleet's current
	// maps are shared again from the next object on.
	sharedMapsMax = 1024
)

// interned shares label and annotation memory between the cached Nodes
// and NodeClaims: the informer decodes every object's maps and strings
// afresh, and of a lean node+claim pair's live heap the maps are the
// largest part (docs/performance.md#what-the-cache-keeps).
var interned = newInternTable(internMax, sharedMapsMax)

type internTable struct {
	mu   sync.Mutex
	m    map[string]string
	max  int
	seed maphash.Seed
	// maps and values hold shared maps and other shared parts of the
	// cached objects (sharedValue) by a hash of their content.
	maps   hashed[map[string]string]
	values hashed[any]
}

func newInternTable(maxStrings, maxShared int) *internTable {
	return &internTable{m: map[string]string{}, max: maxStrings, seed: maphash.MakeSeed(),
		maps:   hashed[map[string]string]{m: map[uint64][]map[string]string{}, max: maxShared},
		values: hashed[any]{m: map[uint64][]any{}, max: maxShared}}
}

// hashed holds values by the hash of their content, a hash's values
// compared whole (they differ on a collision). Full, it is emptied and
// fills again: values handed out stay with their objects.
type hashed[T any] struct {
	m      map[uint64][]T
	n, max int
}

func (b *hashed[T]) find(h uint64, equal func(T) bool) (T, bool) {
	for _, c := range b.m[h] {
		if equal(c) {
			return c, true
		}
	}
	var zero T
	return zero, false
}

func (b *hashed[T]) add(h uint64, v T) {
	if b.n >= b.max {
		clear(b.m)
		b.n = 0
	}
	b.m[h] = append(b.m[h], v)
	b.n++
}

// sharedValue returns the table's value equal to v (by equal, which is
// handed each candidate under v's hash h), adding v when there is none.
func (t *internTable) sharedValue(h uint64, v any, equal func(any) bool) any {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.values.find(h, equal); ok {
		return c
	}
	t.values.add(h, v)
	return v
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
	return t.rebuilt(m)
}

func (t *internTable) rebuilt(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[t.str(k)] = t.str(v)
	}
	return out
}

// shared returns the one map of the table equal to m, adding m rebuilt
// from shared strings when there is none (nil and empty stay as they
// are). Cached objects are never written in place — the cache's reader
// hands out deep copies, and the event handlers only read — so objects
// may share a map.
func (t *internTable) shared(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h := t.hash(m)
	if c, ok := t.maps.find(h, func(c map[string]string) bool { return maps.Equal(c, m) }); ok {
		return c
	}
	out := t.rebuilt(m)
	t.maps.add(h, out)
	return out
}

// hash is m's content hash, whatever order its entries come in.
func (t *internTable) hash(m map[string]string) uint64 {
	var sum uint64
	for k, v := range m {
		var h maphash.Hash
		h.SetSeed(t.seed)
		h.WriteString(k)
		h.WriteByte(0)
		h.WriteString(v)
		sum += h.Sum64()
	}
	return sum
}
