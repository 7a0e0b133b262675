package observe

import (
	"sort"
	"sync"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/census"
)

// Lost is a claim of a governed pool that Karpenter deleted for expiry
// with no rotation of it in flight, which the pool's expired-unrotated
// does not record yet (docs/design.md#coverage).
type Lost struct {
	Claim               string
	Deadline, DeletedAt time.Time
	// Why is why no rotation of it started, in words: its census class at
	// the last pass of this process that saw it before its deletion.
	Why string
}

// Memory keeps, per pool, each claim's census class at the last pass that
// saw it alive — what ExpiredUnrotated says of a claim Karpenter expires.
// It is process memory: a controller started after the claim's deletion
// says it did not see it. Nil keeps nothing.
type Memory struct {
	mu   sync.Mutex
	last map[string]map[string]string // pool → claim → class (or class:gate)
}

// NewMemory is an empty Memory.
func NewMemory() *Memory { return &Memory{last: map[string]map[string]string{}} }

// The class a Memory records for an eligible claim behind the one the
// census picked.
const classOutranked = "outranked"

// remember replaces the pool's record with this pass's classes, keeping
// the previous class of each claim now deleting, and returns that record.
func (m *Memory) remember(obs *Observation) map[string]string {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	prev := m.last[obs.Pool.Name]
	next := make(map[string]string, len(obs.Claims))
	cand := obs.Candidate()
	// a closed gate holds every eligible claim; with the gates open, the
	// claims behind the candidate wait for rotation slots
	gate := startHeldBy(obs)
	held := "candidate:" + gate
	for i := range obs.Claims {
		c := &obs.Claims[i]
		f, ok := obs.Census.Figures[c.Name]
		switch {
		case c.DeletionTimestamp != nil || !ok:
			if class, seen := prev[c.Name]; seen {
				next[c.Name] = class
			}
		case obs.Census.Blocked[c.Name].Blockers != nil:
			next[c.Name] = census.ClassDrainBlocked
		case f.Class != census.ClassCandidate:
			next[c.Name] = f.Class
		case gate != heldOther && gate != heldSlotsFull, cand != nil && cand.Claim.Name == c.Name:
			next[c.Name] = held
		default:
			next[c.Name] = classOutranked
		}
	}
	m.last[obs.Pool.Name] = next
	return next
}

func (m *Memory) forget(pool string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, pool)
}

// expiredUnrotated reports the deadline of a claim Karpenter deleted for
// expiry — its deletionTimestamp at or after creation + its own
// expireAfter, the moment Karpenter's expiration deletes it — with no
// rotation of it in flight (a rotation that meets the deadline ends as
// completed_total{outcome="expired"}).
func expiredUnrotated(c *karpv1.NodeClaim, anchored map[string]bool) (time.Time, bool) {
	e := c.Spec.ExpireAfter.Duration
	if c.DeletionTimestamp == nil || e == nil || anchored[c.Name] {
		return time.Time{}, false
	}
	deadline := c.CreationTimestamp.Add(*e)
	if c.DeletionTimestamp.Time.Before(deadline.Truncate(time.Second)) {
		return time.Time{}, false // deleted for another reason
	}
	if v1alpha1.RotationMetDeadline(c.Annotations[v1alpha1.AnnotationState]) {
		return time.Time{}, false
	}
	return deadline, true
}

// lost finds the claims of a governed pool lost to Karpenter's expiry that
// its expired-unrotated does not record — deleted within the span it
// keeps, so an entry is never dropped while its claim could be found
// again — and returns the one deleted first; it remembers this pass's
// classes either way.
func (o *Observer) lost(obs *Observation) *Lost {
	classes := o.Memory.remember(obs)
	raw := obs.Pool.Annotations[v1alpha1.AnnotationExpiredUnrotated]
	recorded, err := v1alpha1.ParseLosses(raw)
	if err != nil {
		obs.BadAnnotations = append(obs.BadAnnotations, census.BadAnnotation{
			Object: "NodePool/" + obs.Pool.Name, Key: v1alpha1.AnnotationExpiredUnrotated, Value: raw, Problem: err.Error(),
			Effect: "its malformed entries are dropped at the next record; a claim they named may be counted again"})
	}
	var found []Lost
	for i := range obs.Claims {
		c := &obs.Claims[i]
		deadline, ok := expiredUnrotated(c, obs.CensusInput.Anchored)
		if !ok || obs.Now.Sub(c.DeletionTimestamp.Time) >= v1alpha1.LossesKept || v1alpha1.Recorded(recorded, c.Name) {
			continue
		}
		found = append(found, Lost{Claim: c.Name, Deadline: deadline, DeletedAt: c.DeletionTimestamp.Time, Why: why(classes[c.Name])})
	}
	if len(found) == 0 {
		return nil
	}
	sort.Slice(found, func(i, j int) bool {
		if !found[i].DeletedAt.Equal(found[j].DeletedAt) {
			return found[i].DeletedAt.Before(found[j].DeletedAt)
		}
		return found[i].Claim < found[j].Claim
	})
	return &found[0]
}
