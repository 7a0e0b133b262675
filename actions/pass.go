package actions

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// Pass is what the actions of one reconcile pass share: the clients, the
// observation the decision was made on, and what earlier steps reported.
type Pass struct {
	// Client writes (and reads through the cache).
	Client client.Client
	// Fresh reads bypass the cache: every conditional write validates its
	// precondition against a fresh copy and writes with its resourceVersion.
	Fresh client.Reader
	Obs   *observe.Observation
	// PlaceholderPriorityClass and PlaceholderImage shape the placeholder.
	PlaceholderPriorityClass string
	PlaceholderImage         string
	Namespace                string
	Announcer                Announcer
	// Results: what each step of this pass reported, in order.
	Results []Result
}

// Now is the pass's clock reading.
func (p *Pass) Now() time.Time { return p.Obs.Now }

// Claim is the name of the rotation's claim (the anchor, or the candidate).
func (p *Pass) Claim() string { return p.Obs.SubjectName }

// Last returns the most recent result of the named action.
func (p *Pass) Last(action string) (Result, bool) {
	for i := len(p.Results) - 1; i >= 0; i-- {
		if p.Results[i].Action == action {
			return p.Results[i], true
		}
	}
	return Result{}, false
}

// Outcome of a conditional write.
type Outcome string

const (
	Claimed Outcome = "claimed" // the precondition held on a fresh copy and the write landed (or was already in place)
	Raced   Outcome = "raced"   // the fresh copy no longer satisfies the precondition: another pass owns it
	Gone    Outcome = "gone"    // the object no longer exists
	Done    Outcome = "done"    // an unconditional action did its work (or found it done)
)

// Result is what one action reports.
type Result struct {
	Action  string
	Outcome Outcome
	// Did says what happened, for the per-pass debug log.
	Did string
	// Values the announcements read (e.g. retryCount, outcome, drainingAt).
	Values map[string]string
}

// Won reports whether this pass owns what the action wrote.
func (r Result) Won() bool { return r.Outcome == Claimed || r.Outcome == Done }

// Announcer emits the metric, Event and log line of §4.2 for what.
type Announcer interface {
	Announce(ctx context.Context, what string, p *Pass)
}

// Action is one idempotent step.
type Action func(ctx context.Context, p *Pass, args map[string]any) (Result, error)

// Registry maps every catalog name to its implementation.
func Registry() map[string]Action {
	return map[string]Action{
		"anchor-write": anchorWrite, "anchor-release": anchorRelease, "anchor-clear": anchorClear,
		"pool-mirror": poolMirror, "claim-state": claimState, "claim-delete": claimDelete,
		"surge-claim-persist": surgeClaimPersist, "surge-claim-reap": surgeClaimReap,
		"freeze": freeze, "unfreeze": unfreeze, "cordon": cordon, "uncordon": uncordon,
		"placeholder-ensure": placeholderEnsure, "placeholder-delete": placeholderDelete,
		"window-stamp": windowStamp, "window-clear": windowClear, "announce": announce,
	}
}

// Run executes a decision's steps in order. An electing step that does not
// win stops the pass (owned reports false); an error stops it too and is
// returned wrapped with the step.
func Run(ctx context.Context, p *Pass, d engine.Decision) (owned bool, err error) {
	registry := Registry()
	for i, st := range d.Steps {
		act, ok := registry[st.Action]
		if !ok {
			return false, fmt.Errorf("transition %s step %d: action %q is not implemented", d.Transition, i+1, st.Action)
		}
		res, err := act(ctx, p, st.Args)
		res.Action = st.Action
		p.Results = append(p.Results, res)
		if err != nil {
			return false, fmt.Errorf("transition %s step %d (%s): %w", d.Transition, i+1, st.Action, err)
		}
		if st.Elect && !res.Won() {
			return false, nil
		}
	}
	return true, nil
}
