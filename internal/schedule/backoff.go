package schedule

import "time"

// EscalatedBackoff is retryBackoff · 2^(retryCount−1), capped at 8×
// retryBackoff; a retry count below 1 is treated as 1.
func EscalatedBackoff(retryBackoff time.Duration, retryCount int) time.Duration {
	factor := 1
	for i := 1; i < retryCount && factor < MaxBackoffFactor; i++ {
		factor *= 2
	}
	return retryBackoff * time.Duration(factor)
}

// ClampCase names which branch of the window-aware clamp decided a wait.
type ClampCase string

const (
	// ClampNotInWindow: the failure happened outside any occurrence.
	ClampNotInWindow ClampCase = "NotInWindow"
	// ClampFits: the escalated wait ends inside the same occurrence.
	ClampFits ClampCase = "EscalatedFits"
	// ClampSteppedDown: the escalated wait would outlast the occurrence but
	// retryBackoff still fits, so the wait steps down to retryBackoff.
	ClampSteppedDown ClampCase = "SteppedDown"
	// ClampCarriesOver: not even retryBackoff fits; the escalated wait
	// stands and the claim carries over to a later occurrence.
	ClampCarriesOver ClampCase = "CarriesOver"
)

// RetryWait is the window-aware wait after a failure at failedAt with the
// retry count that failure produced (docs/design.md#failure-and-backoff).
func (c Calendar) RetryWait(failedAt time.Time, retryBackoff time.Duration, retryCount int) (time.Duration, ClampCase) {
	escalated := EscalatedBackoff(retryBackoff, retryCount)
	occ, open := c.OccurrenceAt(failedAt)
	switch {
	case !open:
		return escalated, ClampNotInWindow
	case failedAt.Add(escalated).Before(occ.End):
		return escalated, ClampFits
	case failedAt.Add(retryBackoff).Before(occ.End):
		return retryBackoff, ClampSteppedDown
	default:
		return escalated, ClampCarriesOver
	}
}
