package observe

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// claimFigures are one claim's deadline arithmetic.
type claimFigures struct {
	claim     *karpv1.NodeClaim
	deadline  time.Time // zero: expireAfter Never
	trigger   time.Time // when it becomes due by age
	retryAt   time.Time // end of its escalated, clamped backoff
	shortLead bool
}

// census classifies every claim of a governed pool, selects the candidate
// (DESIGN.md §3: earliest deadline, then oldest, then name; short-lead
// claims first, best-effort) and computes the layer-2 findings.
func (o *Observer) census(ctx context.Context, obs *Observation) error {
	obs.Census.Total = len(obs.Claims)
	if !obs.Governed() {
		return nil
	}
	obs.figures = make(map[string]claimFigures, len(obs.Claims))
	var eligible []claimFigures
	var deadlines []time.Time
	for i := range obs.Claims {
		c := &obs.Claims[i]
		f, ok := o.figures(obs, c)
		if !ok {
			continue
		}
		obs.figures[c.Name] = f
		if !f.deadline.IsZero() {
			deadlines = append(deadlines, f.deadline)
		}
		if o.classify(ctx, obs, f) {
			eligible = append(eligible, f)
		}
	}
	pop := schedule.Population{Nodes: len(obs.Claims), Burst: burst(deadlines, obs.Derivation.Cycle.P)}
	obs.Findings = append(schedule.Findings(obs.inputs, obs.Derivation, pop), obs.Settings.Findings()...)
	sort.Slice(eligible, func(i, j int) bool {
		a, b := eligible[i], eligible[j]
		switch {
		case a.shortLead != b.shortLead:
			return a.shortLead
		case !a.deadline.Equal(b.deadline):
			return a.deadline.Before(b.deadline)
		case !a.claim.CreationTimestamp.Equal(&b.claim.CreationTimestamp):
			return a.claim.CreationTimestamp.Before(&b.claim.CreationTimestamp)
		}
		return a.claim.Name < b.claim.Name
	})
	if len(eligible) > 0 {
		best := eligible[0]
		kind := "surge"
		if obs.Settings.ForcefulFallback && !best.deadline.IsZero() && best.deadline.Sub(obs.Now) < obs.Derivation.TRot {
			kind = "forcefulFallback"
		}
		obs.Candidate = &Candidate{Claim: best.claim, Kind: kind, Deadline: best.deadline, Age: obs.Now.Sub(best.claim.CreationTimestamp.Time)}
	}
	return nil
}

// figures computes a claim's deadline, trigger and backoff; ok is false
// when a malformed annotation keeps it out of the census (it is reported).
func (o *Observer) figures(obs *Observation, c *karpv1.NodeClaim) (claimFigures, bool) {
	f := claimFigures{claim: c}
	d := obs.Derivation
	if e := c.Spec.ExpireAfter.Duration; e != nil && !d.NoDeadline && d.Cycle.HasOccurrence {
		f.deadline = c.CreationTimestamp.Add(*e)
		f.shortLead = d.ShortLead(*e)
		if d.Derived {
			f.trigger = f.deadline.Add(-d.Lead)
		} else {
			f.trigger = c.CreationTimestamp.Add(d.A)
		}
	}
	if c.Annotations[v1alpha1.AnnotationState] == v1alpha1.StateFailed {
		at, err := retryAt(obs, c)
		if err != nil {
			obs.BadAnnotations = append(obs.BadAnnotations, *err)
			return f, false
		}
		f.retryAt = at
	}
	return f, true
}

// retryAt is failed-at plus the escalated, window-clamped backoff.
func retryAt(obs *Observation, c *karpv1.NodeClaim) (time.Time, *BadAnnotation) {
	raw := c.Annotations[v1alpha1.AnnotationFailedAt]
	failedAt, err := time.Parse(time.RFC3339, raw)
	if err != nil {
		return time.Time{}, &BadAnnotation{Object: "NodeClaim/" + c.Name, Key: v1alpha1.AnnotationFailedAt, Value: raw, Problem: "not an RFC3339 time"}
	}
	count := 1
	if raw := c.Annotations[v1alpha1.AnnotationRetryCount]; raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 0 {
			return time.Time{}, &BadAnnotation{Object: "NodeClaim/" + c.Name, Key: v1alpha1.AnnotationRetryCount, Value: raw, Problem: "not a non-negative integer"}
		}
		count = n
	}
	wait, _ := obs.Settings.Calendar.RetryWait(failedAt, obs.Settings.RetryBackoff, count)
	return failedAt.Add(wait), nil
}

// classify counts the claim in the census and reports whether it is
// eligible now.
func (o *Observer) classify(ctx context.Context, obs *Observation, f claimFigures) bool {
	c, cen := f.claim, &obs.Census
	if n, err := strconv.Atoi(c.Annotations[v1alpha1.AnnotationRetryCount]); err == nil && n > cen.MaxRetry {
		cen.MaxRetry = n
	}
	if f.shortLead {
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
	case f.deadline.IsZero():
		cen.NoDeadline++
		return false
	case !obs.Now.After(f.trigger):
		cen.NotDue++
		return false
	case !claimReady(c):
		cen.NotReady++
		return false
	case o.optedOut(ctx, c):
		cen.OptedOut++
		return false
	case state == v1alpha1.StateFailed && obs.Now.Before(f.retryAt):
		cen.InBackoff++
		return false
	case state != "" && state != v1alpha1.StateFailed:
		obs.BadAnnotations = append(obs.BadAnnotations, BadAnnotation{Object: "NodeClaim/" + c.Name, Key: v1alpha1.AnnotationState, Value: state, Problem: "not a known state"})
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

// optedOut reports an operator-set karpenter.sh/do-not-disrupt: "true" on the
// claim's node — one without our ownership marker.
func (o *Observer) optedOut(ctx context.Context, c *karpv1.NodeClaim) bool {
	if c.Status.NodeName == "" {
		return false
	}
	n := &corev1.Node{}
	if err := o.Cache.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, n); err != nil {
		return false
	}
	return n.Annotations[v1alpha1.KarpenterDoNotDisrupt] == "true" && n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned] != "true"
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

func getOptional(ctx context.Context, r client.Reader, key client.ObjectKey, obj client.Object) (bool, error) {
	if err := r.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading %T %s: %w", obj, key, err)
	}
	return true, nil
}
