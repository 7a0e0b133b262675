package engine

import (
	"fmt"
	"time"

	"github.com/google/cel-go/common/types"
)

// NextChange is the earliest instant after s.Now at which a fact may change
// value with the rest of the observation held, by the facts' changesAt;
// zero when none lies ahead. The controller wakes then, so a threshold the
// table states — a cooldown's end, a freeze's — is stated once, in the
// table (docs/design.md#requeue-instants).
func (e *Engine) NextChange(s *Snapshot) time.Time {
	var next time.Time
	for _, f := range e.facts {
		for _, t := range f.changesAt(s) {
			if t.After(s.Now) && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}

// ChangesAt lists the instants the named fact declares for the snapshot,
// in the table's order (the property test of the table reads them).
func (e *Engine) ChangesAt(s *Snapshot, name string) ([]time.Time, error) {
	f, ok := e.byName[name]
	if !ok {
		return nil, fmt.Errorf("the table has no fact %q", name)
	}
	return f.changesAt(s), nil
}

// changesAt evaluates the fact's changesAt. One that cannot be evaluated —
// an annotation unset or malformed — gives no instant: the fact itself
// reports a malformed value when a decision reads it.
func (f *fact) changesAt(s *Snapshot) []time.Time {
	var out []time.Time
	for _, prg := range f.changes {
		v, _, err := prg.Eval(snapshotActivation{s})
		if err != nil {
			continue
		}
		if ts, ok := v.(types.Timestamp); ok {
			out = append(out, ts.Time)
		}
	}
	return out
}
