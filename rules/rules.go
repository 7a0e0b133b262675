package rules

import (
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/engine"
)

// Table is the shipped rules file.
//
//go:embed rotation.yaml
var Table []byte

// Observers are the Go observers the table's facts may name.
func Observers() map[string]engine.Observer {
	return map[string]engine.Observer{"retryDue": retryDue}
}

// Load compiles and proves the shipped table with the action catalog.
func Load() (*engine.Engine, error) { return LoadTable(Table) }

// LoadTable compiles and proves a table with the action catalog and the
// observers of this package.
func LoadTable(data []byte) (*engine.Engine, error) {
	return engine.Load(data, engine.Options{Catalog: actions.Catalog(), Observers: Observers()})
}

// retryDue validates the failed claim's failed-at and retry-count (a
// malformed value is an error naming the key and value, never a retry) and
// reports whether the backoff the observer computed into RetryAt is over.
func retryDue(s *engine.Snapshot) (any, error) {
	if s.Claim.FailedAt == "" {
		return true, nil // no failure recorded: nothing to wait for
	}
	if _, err := time.Parse(time.RFC3339, s.Claim.FailedAt); err != nil {
		return nil, fmt.Errorf("noderotation.io/failed-at %q is not an RFC3339 time", s.Claim.FailedAt)
	}
	if s.Claim.RetryCount != "" {
		if n, err := strconv.Atoi(s.Claim.RetryCount); err != nil || n < 0 {
			return nil, fmt.Errorf("noderotation.io/retry-count %q is not a non-negative integer", s.Claim.RetryCount)
		}
	}
	return !s.Now.Before(s.Claim.RetryAt), nil
}
