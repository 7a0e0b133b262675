package controller

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
	// sharedMapsMax bounds the table of whole maps. A pool's NodeClaims
	// carry the same labels (the few kept, leanClaim) and most carry the
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
// largest part (docs/performance.md#fleet-scale).
var interned = newInternTable(internMax, sharedMapsMax)

type internTable struct {
	mu   sync.Mutex
	m    map[string]string
	max  int
	seed maphash.Seed
	// maps holds shared maps by the hash of their content; a hash's
	// maps differ (a collision), so each is compared whole.
	maps    map[uint64][]map[string]string
	nMaps   int
	maxMaps int
	// values holds other parts of the cached objects by a key that spells
	// their content out (sharedValue), under the same bound as maps.
	values map[string]any
}

func newInternTable(maxStrings, maxMaps int) *internTable {
	return &internTable{m: map[string]string{}, max: maxStrings, seed: maphash.MakeSeed(),
		maps: map[uint64][]map[string]string{}, maxMaps: maxMaps, values: map[string]any{}}
}

// sharedValue returns the table's value under key, adding v under it
// when there is none; key must spell out all of v's content, so that
// equal keys mean equal values. Like shared, a full table starts afresh.
func (t *internTable) sharedValue(key string, v any) any {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.values[key]; ok {
		return c
	}
	if len(t.values) >= t.maxMaps {
		clear(t.values)
	}
	t.values[key] = v
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
	for _, c := range t.maps[h] {
		if maps.Equal(c, m) {
			return c
		}
	}
	out := t.rebuilt(m)
	if t.nMaps >= t.maxMaps {
		clear(t.maps)
		t.nMaps = 0
	}
	t.maps[h] = append(t.maps[h], out)
	t.nMaps++
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
