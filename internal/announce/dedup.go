package announce

import "sync"

// dedup remembers which level-triggered conditions are active per pool, so
// an Event or log line fires on entering a condition and again only after
// it has cleared. A condition clears when a pass of its pool ends without
// re-asserting it.
type dedup struct {
	mu      sync.Mutex
	active  map[string]map[string]string // pool → condition key → fingerprint
	touched map[string]map[string]bool   // pool → keys asserted in the current pass
}

func newDedup() *dedup {
	return &dedup{active: map[string]map[string]string{}, touched: map[string]map[string]bool{}}
}

// enter asserts a condition with a fingerprint (e.g. a reason or census);
// it reports true when the condition is new or its fingerprint changed.
func (d *dedup) enter(pool, key, fingerprint string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.touched[pool] == nil {
		d.touched[pool] = map[string]bool{}
	}
	d.touched[pool][key] = true
	if d.active[pool] == nil {
		d.active[pool] = map[string]string{}
	}
	prev, ok := d.active[pool][key]
	d.active[pool][key] = fingerprint
	return !ok || prev != fingerprint
}

// endPass clears the pool's conditions that this pass did not assert.
func (d *dedup) endPass(pool string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for key := range d.active[pool] {
		if !d.touched[pool][key] {
			delete(d.active[pool], key)
		}
	}
	delete(d.touched, pool)
}

// forget drops a deleted pool's state.
func (d *dedup) forget(pool string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.active, pool)
	delete(d.touched, pool)
}
