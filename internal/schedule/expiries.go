package schedule

import (
	"slices"
	"sort"
	"time"
)

// Due is a claim the expiry forecast places: when it becomes a candidate
// (its age trigger) and when Karpenter expires it.
type Due struct {
	Name     string    `json:"name"`
	Trigger  time.Time `json:"trigger"`
	Deadline time.Time `json:"deadline"`
}

// ExpiriesAhead plays a pool forward until `until` with the service model
// of C and the forecast (ForecastSlots): each start takes the slot free
// soonest, at the first instant from then on inside an open occurrence
// but its last StartHold and out of the blackouts, and holds it for
// max(t_rot_est + cooldownAfter, Tick); it goes to the claim with the
// earliest deadline among those past their trigger. A claim whose deadline
// comes before a rotation starting then could end — or before `until`
// with no start left for it — is forecast force-expired. It returns those
// claims, in deadline order: what `rotationctl plan` expects Karpenter to
// expire in the weeks ahead (docs/design.md#coverage-verdict). Failures,
// drain blockers and operator holds are not played: it is the schedule's
// own shortfall.
func (c Calendar) ExpiriesAhead(free []time.Time, claims []Due, t Timing, tRotEst time.Duration, until time.Time) []Due {
	pending := append([]Due(nil), claims...)
	sort.SliceStable(pending, func(i, j int) bool { return pending[i].Deadline.Before(pending[j].Deadline) })
	slots := append([]time.Time(nil), free...)
	if len(slots) == 0 {
		slots = []time.Time{until}
	}
	service := max(tRotEst+t.CooldownAfter, Tick)
	est := tRotEst
	hold := t.StartHold(est)
	var lost []Due
	for len(pending) > 0 {
		i := slices.IndexFunc(slots, slices.MinFunc(slots, time.Time.Compare).Equal)
		at, _, ok := c.startFrom(slots[i], hold, t, until)
		ok = ok && at.Before(until)
		// the claims a start now can no longer rotate in time are lost
		for len(pending) > 0 && (!ok || pending[0].Deadline.Before(at.Add(est))) {
			if !pending[0].Deadline.Before(until) {
				return lost // beyond the horizon: not judged (nor any later deadline)
			}
			lost = append(lost, pending[0])
			pending = pending[1:]
		}
		if !ok || len(pending) == 0 {
			break
		}
		j := slices.IndexFunc(pending, func(d Due) bool { return !d.Trigger.After(at) })
		if j < 0 {
			// nothing due yet: the slot waits for the first trigger
			slots[i] = slices.MinFunc(pending, func(a, b Due) int { return a.Trigger.Compare(b.Trigger) }).Trigger
			continue
		}
		pending = slices.Delete(pending, j, j+1)
		slots[i] = at.Add(service)
	}
	return lost
}
