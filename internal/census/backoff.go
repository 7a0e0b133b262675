package census

import (
	"errors"
	"strconv"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/policy"
)

// Backoff is a failed claim's failure record, parsed.
type Backoff struct {
	FailedAt   time.Time
	RetryCount int // 1 when the annotation is absent
}

// ParseBackoff parses the raw failed-at and retry-count values of a claim
// (docs/design.md#failure-and-backoff). A malformed value is reported with
// its key; it never becomes a retry.
func ParseBackoff(failedAt, retryCount string) (Backoff, *BadAnnotation) {
	at, err := time.Parse(time.RFC3339, failedAt)
	if err != nil {
		return Backoff{}, &BadAnnotation{Key: v1alpha1.AnnotationFailedAt, Value: failedAt, Problem: "not an RFC3339 time"}
	}
	b := Backoff{FailedAt: at, RetryCount: 1}
	if retryCount != "" {
		n, bad := parseRetryCount(retryCount)
		if bad != nil {
			return Backoff{}, bad
		}
		b.RetryCount = n
	}
	return b, nil
}

// parseRetryCount parses a retry-count value: a non-negative integer.
func parseRetryCount(raw string) (int, *BadAnnotation) {
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0, &BadAnnotation{Key: v1alpha1.AnnotationRetryCount, Value: raw, Problem: "not a non-negative integer"}
	}
	return n, nil
}

// RetryAt is when the backoff ends: failed-at plus the escalated
// retryBackoff, clamped to the policy's windows.
func (b Backoff) RetryAt(s policy.Settings) time.Time {
	wait, _ := s.Calendar.RetryWait(b.FailedAt, s.RetryBackoff, b.RetryCount)
	return b.FailedAt.Add(wait)
}

// ClaimRetryAt parses a claim's failure record and returns when its backoff
// ends; the BadAnnotation names the claim. A claim with no failed-at has
// no failure time to wait from: its backoff is over (as RetryDue says).
func ClaimRetryAt(c *karpv1.NodeClaim, s policy.Settings) (time.Time, *BadAnnotation) {
	raw := c.Annotations[v1alpha1.AnnotationFailedAt]
	if raw == "" {
		if n := c.Annotations[v1alpha1.AnnotationRetryCount]; n != "" {
			if _, bad := parseRetryCount(n); bad != nil {
				bad.Object = "NodeClaim/" + c.Name
				return time.Time{}, bad
			}
		}
		return time.Time{}, nil
	}
	b, bad := ParseBackoff(raw, c.Annotations[v1alpha1.AnnotationRetryCount])
	if bad != nil {
		bad.Object = "NodeClaim/" + c.Name
		return time.Time{}, bad
	}
	return b.RetryAt(s), nil
}

// RetryDue is the table's retryDue fact: whether the backoff the observer
// computed into the snapshot's RetryAt is over. A failure record the
// observer found malformed (BackoffError) is an error naming the key and
// value, never a retry; a claim with no failure recorded has nothing to
// wait for. It parses nothing: the observer parsed the record once.
func RetryDue(s *engine.Snapshot) (any, error) {
	if s.Claim.FailedAt == "" {
		return true, nil
	}
	if s.Claim.BackoffError != "" {
		return nil, errors.New(s.Claim.BackoffError)
	}
	return !s.Now.Before(s.Claim.RetryAt), nil
}
