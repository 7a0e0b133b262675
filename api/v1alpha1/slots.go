package v1alpha1

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Slot is one of a NodePool's rotation slots (docs/design.md#throughput):
// with maxUnavailable N, up to N rotations are in flight, each anchored in
// its own slot. Slot 1 keeps the keys of one rotation at a time, so a
// pool that rotates one node at a time looks exactly as before; slot k ≥ 2
// puts "slotk." in front of the key's name.
type Slot int

// slotted are the NodePool keys each slot has its own of: the
// rotation-scoped set, cleared with the anchor, and the slot's last
// success, the cooldown's anchor, kept after it.
var slotted = append(append([]string(nil), RotationScoped...), AnnotationLastRotationAt)

// Key is the slot's copy of key, one of the slotted NodePool keys.
func (s Slot) Key(key string) string {
	if s <= 1 {
		return key
	}
	return Prefix + "slot" + strconv.Itoa(int(s)) + "." + strings.TrimPrefix(key, Prefix)
}

// RotationScoped are the slot's keys cleared with its anchor.
func (s Slot) RotationScoped() []string {
	out := make([]string, len(RotationScoped))
	for i, k := range RotationScoped {
		out[i] = s.Key(k)
	}
	return out
}

// SlotOf parses a NodePool annotation key: the slot and the slot-1 key it
// is a copy of, when it is one of the slotted keys.
func SlotOf(key string) (Slot, string, bool) {
	name, ok := strings.CutPrefix(key, Prefix)
	if !ok {
		return 0, "", false
	}
	s := Slot(1)
	if rest, ok := strings.CutPrefix(name, "slot"); ok {
		num, base, found := strings.Cut(rest, ".")
		n, err := strconv.Atoi(num)
		if !found || err != nil || n < 2 || strconv.Itoa(n) != num {
			return 0, "", false
		}
		s, name = Slot(n), base
	}
	for _, k := range slotted {
		if Prefix+name == k {
			return s, k, true
		}
	}
	return 0, "", false
}

// Anchor is one anchored slot and the claim it names.
// +kubebuilder:object:generate=false
type Anchor struct {
	Slot  Slot
	Claim string
}

// Anchors are the pool's anchored slots, in slot order.
func Anchors(annotations map[string]string) []Anchor {
	var out []Anchor
	for k, v := range annotations {
		if s, base, ok := SlotOf(k); ok && base == AnnotationActiveRotation && v != "" {
			out = append(out, Anchor{Slot: s, Claim: v})
		}
	}
	slices.SortFunc(out, func(a, b Anchor) int { return int(a.Slot - b.Slot) })
	return out
}

// StartSlot is the slot a start takes among slots 1 to n: a free one whose
// last success (its cooldown's anchor) is the oldest — none counts as
// oldest, a value that does not parse too (the start gate reports it) —
// the lowest on a tie; false when all n are anchored.
func StartSlot(annotations map[string]string, n int) (Slot, bool) {
	best, found := Slot(0), false
	var bestAt time.Time
	for s := Slot(1); int(s) <= n; s++ {
		if annotations[s.Key(AnnotationActiveRotation)] != "" {
			continue
		}
		at, _ := time.Parse(time.RFC3339, annotations[s.Key(AnnotationLastRotationAt)])
		if !found || at.Before(bestAt) {
			best, bestAt, found = s, at, true
		}
	}
	return best, found
}

// FreeSlot is the lowest slot without an anchor, whatever n: where a
// rotation already in flight that no slot names is re-adopted.
func FreeSlot(annotations map[string]string) Slot {
	s := Slot(1)
	for annotations[s.Key(AnnotationActiveRotation)] != "" {
		s++
	}
	return s
}
