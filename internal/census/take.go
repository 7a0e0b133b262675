package census

import (
	"sort"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// Input is what a census reads: the pool's claims, the governing policy's
// settings and the pool's schedule derivation, the clock, and whether a
// claim's node carries an operator's do-not-disrupt.
type Input struct {
	Now        time.Time
	Claims     []karpv1.NodeClaim
	Settings   policy.Settings
	Derivation schedule.Derivation
	OptedOut   func(*karpv1.NodeClaim) bool
}

// Result is a census and what it decided.
type Result struct {
	Census    Census
	Candidate *Candidate
	// Figures of every claim with a well-formed failure record, by name.
	Figures map[string]Figures
	// Bad lists the malformed annotations that kept claims out.
	Bad []BadAnnotation
	// Population is what the layer-2 findings read.
	Population schedule.Population
}

// Take classifies every claim and selects the candidate: short-lead claims
// first (best-effort), then the earliest deadline, the oldest, the name
// (docs/design.md#age-threshold).
func Take(in Input) Result {
	r := Result{Census: Census{Total: len(in.Claims)}, Figures: make(map[string]Figures, len(in.Claims))}
	var eligible []Figures
	var deadlines []time.Time
	for i := range in.Claims {
		c := &in.Claims[i]
		f, bad := figures(in, c)
		if bad != nil {
			r.Bad = append(r.Bad, *bad)
			continue
		}
		r.Figures[c.Name] = f
		if !f.Deadline.IsZero() {
			deadlines = append(deadlines, f.Deadline)
		}
		if r.classify(in, f) {
			eligible = append(eligible, f)
		}
	}
	r.Population = schedule.Population{Nodes: len(in.Claims), Burst: burst(deadlines, in.Derivation.Cycle.P)}
	if len(eligible) > 0 {
		r.Candidate = pick(in, eligible)
	}
	return r
}

// pick orders the eligible claims and takes the first, deciding whether it
// takes the surge or the surge-less forceful fallback.
func pick(in Input, eligible []Figures) *Candidate {
	sort.Slice(eligible, func(i, j int) bool {
		a, b := eligible[i], eligible[j]
		switch {
		case a.ShortLead != b.ShortLead:
			return a.ShortLead
		case !a.Deadline.Equal(b.Deadline):
			return a.Deadline.Before(b.Deadline)
		case !a.Claim.CreationTimestamp.Equal(&b.Claim.CreationTimestamp):
			return a.Claim.CreationTimestamp.Before(&b.Claim.CreationTimestamp)
		}
		return a.Claim.Name < b.Claim.Name
	})
	best := eligible[0]
	kind := "surge"
	if in.Settings.ForcefulFallback && !best.Deadline.IsZero() && best.Deadline.Sub(in.Now) < in.Derivation.TRot {
		kind = "forcefulFallback"
	}
	return &Candidate{Claim: best.Claim, Kind: kind, Deadline: best.Deadline, Age: in.Now.Sub(best.Claim.CreationTimestamp.Time)}
}

// figures computes a claim's deadline, trigger and backoff; a malformed
// failure record keeps the claim out of the census.
func figures(in Input, c *karpv1.NodeClaim) (Figures, *BadAnnotation) {
	f := Figures{Claim: c}
	d := in.Derivation
	if e := c.Spec.ExpireAfter.Duration; e != nil && !d.NoDeadline && d.Cycle.HasOccurrence {
		f.Deadline = c.CreationTimestamp.Add(*e)
		f.ShortLead = d.ShortLead(*e)
		if d.Derived {
			f.Trigger = f.Deadline.Add(-d.Lead)
		} else {
			f.Trigger = c.CreationTimestamp.Add(d.A)
		}
	}
	if c.Annotations[v1alpha1.AnnotationState] == v1alpha1.StateFailed {
		at, bad := ClaimRetryAt(c, in.Settings)
		if bad != nil {
			return f, bad
		}
		f.RetryAt = at
	}
	return f, nil
}

// classify counts the claim in its census class and reports whether it is
// eligible now.
func (r *Result) classify(in Input, f Figures) bool {
	c, cen := f.Claim, &r.Census
	if n, bad := parseRetryCount(c.Annotations[v1alpha1.AnnotationRetryCount]); bad == nil && n > cen.MaxRetry {
		cen.MaxRetry = n
	}
	if f.ShortLead {
		cen.ShortLead++
	}
	state := c.Annotations[v1alpha1.AnnotationState]
	switch {
	case c.DeletionTimestamp != nil:
		cen.Deleting++
		return false
	case state == v1alpha1.StateExpired:
		cen.Expired++
		return false
	case state == v1alpha1.StatePending || state == v1alpha1.StateDraining:
		cen.InFlight++
		return false
	case f.Deadline.IsZero():
		cen.NoDeadline++
		return false
	case !in.Now.After(f.Trigger):
		cen.NotDue++
		return false
	case !claimReady(c):
		cen.NotReady++
		return false
	case in.OptedOut != nil && in.OptedOut(c):
		cen.OptedOut++
		return false
	case state == v1alpha1.StateFailed && in.Now.Before(f.RetryAt):
		cen.InBackoff++
		return false
	case state != "" && state != v1alpha1.StateFailed:
		r.Bad = append(r.Bad, BadAnnotation{Object: "NodeClaim/" + c.Name, Key: v1alpha1.AnnotationState, Value: state, Problem: "not a known state"})
		return false
	}
	cen.Candidates++
	return true
}

// claimReady reports the claim's Ready condition is True.
func claimReady(c *karpv1.NodeClaim) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == "Ready" {
			return cond.Status == "True"
		}
	}
	return false
}

// burst is the largest number of deadlines within one period P of each
// other: claims that compete for the same K occurrences.
func burst(deadlines []time.Time, p time.Duration) int {
	sort.Slice(deadlines, func(i, j int) bool { return deadlines[i].Before(deadlines[j]) })
	best, lo := 0, 0
	for hi := range deadlines {
		for deadlines[hi].Sub(deadlines[lo]) > p {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

// Instants are the future moments a claim's class can change: each age
// trigger and backoff end.
func (r Result) Instants() []time.Time {
	out := make([]time.Time, 0, 2*len(r.Figures))
	for _, f := range r.Figures {
		out = append(out, f.Trigger, f.RetryAt)
	}
	return out
}
