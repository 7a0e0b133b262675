package observe

import (
	"context"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
)

// slots builds the pass's per-slot observations
// (docs/design.md#throughput): each anchored slot in slot order, then the
// free slot below the number in force that a start or a re-adoption
// takes. The stranded artefacts are shown to one of them only, so two
// slots never handle one stranded rotation two ways: the first anchored
// slot whose claim is gone (it supersedes the gone claim with the live
// one, as one rotation at a time always did), else the free slot (it
// re-adopts or repairs), else the first anchored slot (the pool is full:
// it repairs).
func (o *Observer) slots(ctx context.Context, obs *Observation) error {
	a := obs.Pool.Annotations
	var out []*Observation
	for _, an := range v1alpha1.Anchors(a) {
		out = append(out, obs.forSlot(an.Slot))
	}
	if s, ok := v1alpha1.StartSlot(a, max(obs.InForce.N, 1)); ok {
		out = append(out, obs.forSlot(s))
	}
	owner := 0 // the first anchored slot, when none is free
	if free := len(out) - 1; out[free].Anchor() == "" {
		owner = free
	}
	for i, s := range out {
		if s.Anchor() != "" && !obs.hasClaim(s.Anchor()) {
			owner = i
			break
		}
	}
	for i, s := range out {
		if i != owner {
			s.Stranded = Stranded{}
		}
		if err := o.subject(ctx, s); err != nil {
			return err
		}
		obs.ReadErrors = append(obs.ReadErrors, s.ReadErrors...)
		s.ReadErrors = nil
	}
	obs.Slots = out
	return nil
}

// forSlot is a copy of the pool's observation for one slot, with no
// subject yet.
func (o *Observation) forSlot(s v1alpha1.Slot) *Observation {
	c := *o
	c.Slot, c.Slots, c.ReadErrors = s, nil, nil
	return &c
}

// hasClaim: the pool has a claim of that name.
func (o *Observation) hasClaim(name string) bool {
	for i := range o.Claims {
		if o.Claims[i].Name == name {
			return true
		}
	}
	return false
}

// first gives the pool's own observation its first slot's subject fields,
// for the tools that look at one rotation (rotationctl explain and status
// at one rotation at a time).
func (o *Observation) first() {
	f := o.Slots[0]
	o.Subject, o.SubjectName, o.OldNode, o.Placeholder = f.Subject, f.SubjectName, f.OldNode, f.Placeholder
	o.SurgeHost, o.SurgeHostClaim, o.InducedClaim, o.Unservable = f.SurgeHost, f.SurgeHostClaim, f.InducedClaim, f.Unservable
	o.Sizing, o.Shortfall, o.AvoidHostnames, o.AnchorPaired = f.Sizing, f.Shortfall, f.AvoidHostnames, f.AnchorPaired
	o.PrePull = f.PrePull
}

// poolSnapshot is what the window machine decides on: with one slot, that
// slot's snapshot (so one rotation at a time decides exactly as before);
// with several, the first slot's, anchored while any slot is, its last
// rotation the newest of the slots'.
func poolSnapshot(obs *Observation) engine.Snapshot {
	s := obs.Slots[0].Snapshot
	if len(obs.Slots) == 1 {
		return s
	}
	a := obs.Pool.Annotations
	if anchors := v1alpha1.Anchors(a); len(anchors) > 0 {
		s.Pool.Anchor = anchors[0].Claim
	}
	var newest time.Time
	for k, raw := range a {
		if _, base, ok := v1alpha1.SlotOf(k); !ok || base != v1alpha1.AnnotationLastRotationAt || raw == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339, raw)
		switch {
		case err != nil:
			// a malformed value is the window machine's to report
			s.Pool.LastRotationAt, newest = raw, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
		case at.After(newest):
			s.Pool.LastRotationAt, newest = raw, at
		}
	}
	return s
}

// FreeSlot is the slot observation of the free slot a start or a
// re-adoption would take, nil when every slot below the number in force is
// anchored.
func (o *Observation) FreeSlot() *Observation {
	if n := len(o.Slots); n > 0 && o.Slots[n-1].Anchor() == "" {
		return o.Slots[n-1]
	}
	return nil
}
