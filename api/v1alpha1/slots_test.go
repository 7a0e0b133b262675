package v1alpha1

import (
	"reflect"
	"testing"
)

func TestSlotKeysLeaveSlotOneAsItWas(t *testing.T) {
	for _, k := range RotationScoped {
		if Slot(1).Key(k) != k {
			t.Errorf("slot 1 renames %s to %s: a pool at one rotation at a time must look as before", k, Slot(1).Key(k))
		}
	}
	if got := Slot(3).Key(AnnotationActiveRotationState); got != "noderotation.io/slot3.active-rotation-state" {
		t.Errorf("slot 3's mirror key = %s", got)
	}
	if got := Slot(2).RotationScoped(); len(got) != len(RotationScoped) || got[0] != "noderotation.io/slot2.active-rotation" {
		t.Errorf("slot 2's rotation-scoped keys = %v", got)
	}
}

func TestSlotOf(t *testing.T) {
	for _, c := range []struct {
		key  string
		slot Slot
		base string
		ok   bool
	}{
		{AnnotationActiveRotation, 1, AnnotationActiveRotation, true},
		{Slot(12).Key(AnnotationSurgeNode), 12, AnnotationSurgeNode, true},
		{Slot(2).Key(AnnotationLastRotationAt), 2, AnnotationLastRotationAt, true},
		{AnnotationFreeze, 0, "", false},                  // pool-wide
		{Prefix + "slot2.freeze", 0, "", false},           // not a slotted key
		{Prefix + "slot1.active-rotation", 0, "", false},  // slot 1 has no prefix
		{Prefix + "slot02.active-rotation", 0, "", false}, // one spelling per slot
		{Prefix + "slotx.active-rotation", 0, "", false},
		{"example.com/slot2.active-rotation", 0, "", false},
	} {
		s, base, ok := SlotOf(c.key)
		if s != c.slot || base != c.base || ok != c.ok {
			t.Errorf("SlotOf(%s) = %d %s %v, want %d %s %v", c.key, s, base, ok, c.slot, c.base, c.ok)
		}
	}
}

func TestAnchorsAndTheSlotAStartTakes(t *testing.T) {
	a := map[string]string{
		AnnotationActiveRotation:                   "a",
		Slot(3).Key(AnnotationActiveRotation):      "c",
		Slot(2).Key(AnnotationActiveRotationState): "pending", // a mirror alone anchors nothing
		Slot(2).Key(AnnotationLastRotationAt):      "2026-12-03T10:00:00Z",
		Slot(4).Key(AnnotationLastRotationAt):      "2026-12-03T09:00:00Z",
	}
	if got, want := Anchors(a), []Anchor{{1, "a"}, {3, "c"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Anchors = %v, want %v", got, want)
	}
	for _, c := range []struct {
		n    int
		want Slot
		ok   bool
	}{
		{1, 0, false}, // slot 1 is taken
		{2, 2, true},
		{3, 2, true},
		{4, 4, true}, // rested longer than slot 2
		{5, 5, true}, // never used: the oldest
	} {
		s, ok := StartSlot(a, c.n)
		if s != c.want || ok != c.ok {
			t.Errorf("StartSlot(n=%d) = %d %v, want %d %v", c.n, s, ok, c.want, c.ok)
		}
	}
	if s := FreeSlot(a); s != 2 {
		t.Errorf("FreeSlot = %d, want 2", s)
	}
	if s := FreeSlot(map[string]string{}); s != 1 {
		t.Errorf("FreeSlot of an idle pool = %d, want 1", s)
	}
}
