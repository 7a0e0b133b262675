package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/conditional"
)

// Pass is what the steps of one reconcile pass share: the clients, the
// targets, and what earlier steps reported.
type Pass struct {
	// Client writes (and reads through the cache).
	Client client.Client
	// Fresh reads bypass the cache: only the recovery steps (re-adopt,
	// repair) and a write to an object the pass never observed validate
	// against one; every other write decides on the pass's own copy.
	Fresh   client.Reader
	Targets Targets
	// Results: what each step of this pass reported, in order.
	Results []Result
	// earned: the announcements this pass's announce steps earned, in
	// order (RunFrom returns each step's share).
	earned []Earned

	// held is the newest copy of each object the pass observed or wrote
	// (copies.go); stale is set once a write met a newer object.
	held  map[copyKey]client.Object
	stale bool
	// wrote: the resourceVersion of each object's last write (Wrote).
	wrote map[copyKey]string
	// electing: the running step elects. confirmed: objects whose copy the
	// server returned in this pass. unconfirmed: an election made on a copy
	// the server never saw (confirm.go).
	electing    bool
	confirmed   map[copyKey]bool
	unconfirmed map[copyKey]client.Object
}

// ErrStale stops a pass one of whose writes met a newer object than the one
// it decided on: the reconciler requeues it, and the next pass decides on a
// cache that has caught up (docs/design.md#cache-based-writes).
var ErrStale = errors.New("a write met a newer object than this pass observed")

// Outcome of a step: a conditional write's Claimed, Raced or Gone, or Done
// for an unconditional step.
type Outcome = conditional.Outcome

// The outcomes a step reports.
const (
	Claimed = conditional.Claimed
	Raced   = conditional.Raced
	Gone    = conditional.Gone
	Stale   = conditional.Stale
	Done    = Outcome("done") // an unconditional step did its work (or found it done)
)

// Result is what one step reports. Besides the outcome, a step that earns
// an announcement reports what the announcement reads of its write in a
// typed field of its own (nil or empty from every other step); a later
// step never reads these, it reads the pass's held copy of the object
// (copies.go).
type Result struct {
	Action  string
	Outcome Outcome
	// Did says what happened, for the per-pass debug log.
	Did string
	// Changed: the step's create or delete took effect in this pass (an
	// announce step with onlyIfChanged speaks only after one).
	Changed bool

	// Failure: the failure record a claimed claim-state write left on the
	// claim (RotationFailed reads it).
	Failure *Failure
	// Released: what a claimed anchor-release read from the copy its
	// write was locked on (RotationCompleted reads it).
	Released *Released
	// Readopted: the state of the claim a claimed re-adopting anchor-write
	// anchored, and Anchored its name (AnchorRestored); Superseded: the
	// anchor value that write replaced, empty when the pool had none.
	Readopted, Anchored, Superseded string
	// Mirror: the active-rotation-state a claimed anchor-clear found
	// (GovernanceLost reads whether the drain hold already said it).
	Mirror string
	// Repaired and FailedClaims: what repair-stranded did, and the claims
	// it failed (StrandedRepaired).
	Repaired     string
	FailedClaims []string
	// WindowOpenedAt: the stamp window-clear observed (WindowMissed).
	WindowOpenedAt string
	// Lost: the claim a claimed loss-record recorded (ExpiredUnrotated).
	Lost *Lost
	// Unfrozen: the nodes unfreeze released, in list order (the surge host
	// of a completion whose pool recorded none).
	Unfrozen []string
	// PrePullImages: the images of the pre-pull Pod a create made
	// (PrePullStarted); PrePull: the record a claimed prepull-record wrote
	// (PrePullEnded).
	PrePullImages int
	PrePull       *PrePullEnd
	// PrePullRefused: why the API server refused the pre-pull Pod
	// (PrePullRefused).
	PrePullRefused string
}

// PrePullEnd is how a pre-pull phase ended, as its record was written, and
// the images the Pod could not pull.
type PrePullEnd struct {
	Record       v1alpha1.PrePullRecord
	FailedImages []string
}

// Failure is the failure record a claim-state write left on the claim, as
// written: noderotation.io/failure-reason, failed-at and retry-count.
type Failure struct {
	Reason, FailedAt, RetryCount string
}

// Released is what anchor-release read from the pool copy its write was
// locked on: the outcome (success, expired, or recorded when the pass
// that recorded the expiry already announced it) and the rotation's
// figures as the pool carried them, unparsed.
type Released struct {
	Outcome                                string
	DrainingAt, SurgeWait, SurgeNode, Mode string
	// PrePull is the pre-pull phase's record, empty when it had none.
	PrePull string
}

// The outcomes anchor-release reads.
const (
	ReleasedSuccess  = "success"
	ReleasedExpired  = "expired"
	ReleasedRecorded = "recorded"
	// ReleasedUngoverned: the pool lost its policy while the claim drained
	// (the governance-lost mirror): no success, and GovernanceLost was
	// said by the pass that recorded it.
	ReleasedUngoverned = "governance-lost"
)

// Earned is an announcement an announce step earned, with what the pass's
// steps reported before it: the announcer reads the typed fields of those
// results, never the objects the steps wrote.
type Earned struct {
	What   Announcement
	Before []Result
}

// Ran is what running a decision's steps came to.
type Ran struct {
	// Done: the run ended — every step ran, an election was lost, or a
	// step failed. Owned, once Done: every electing step won; false when
	// one lost (the pass stops) or a step failed.
	Done, Owned bool
	// Next is the step a run that is not Done goes on from.
	Next int
	// Earned: the announcements the steps earned, in step order, complete
	// up to the step that stopped the run (docs/design.md#announcements).
	Earned []Earned
}

// Won reports whether this pass owns what the step wrote.
func (r Result) Won() bool { return r.Outcome == Claimed || r.Outcome == Done }

// Last returns the most recent result of the named action in results.
func Last(results []Result, action string) (Result, bool) {
	for i := len(results) - 1; i >= 0; i-- {
		if results[i].Action == action {
			return results[i], true
		}
	}
	return Result{}, false
}

// body is an action's implementation.
type body func(ctx context.Context, p *Pass, args map[string]any) (Result, error)

// action is an action's contract and its body, declared together.
type action struct {
	spec engine.ActionSpec
	run  body
}

// all is every action the table may name.
var all = []action{
	anchorWriteAction, anchorReleaseAction, anchorClearAction, poolMirrorAction,
	claimStateAction, claimDeleteAction, surgeClaimPersistAction, surgeClaimReapAction,
	freezeAction, unfreezeAction, cordonAction, uncordonAction,
	placeholderEnsureAction, placeholderDeleteAction, prePullEnsureAction, prePullDeleteAction, prePullRecordAction,
	windowStampAction, windowClearAction, repairStrandedAction, lossRecordAction, announceAction,
}

var registry = func() map[string]body {
	m := make(map[string]body, len(all))
	for _, a := range all {
		m[a.spec.Name] = a.run
	}
	return m
}()

// Catalog is the fixed set of actions the rules table may name, with the
// arguments each accepts; the engine checks every step against it when the
// table loads.
func Catalog() engine.Catalog {
	c := engine.Catalog{}
	for _, a := range all {
		c[a.spec.Name] = a.spec
	}
	return c
}

// Run executes all of a decision's steps (RunFrom until done) and returns
// every announcement they earned: for a caller that says them afterwards,
// or not at all (a dry run, the tests of the steps).
func Run(ctx context.Context, p *Pass, d engine.Decision) (Ran, error) {
	var all Ran
	for !all.Done {
		ran, err := RunFrom(ctx, p, d, all.Next)
		ran.Earned = append(all.Earned, ran.Earned...)
		all = ran
		if err != nil {
			return all, err
		}
	}
	return all, nil
}

// RunFrom executes a decision's steps in order from step from, and returns
// after the first announce step that earned something, so the caller says
// it before the next step runs: an announcement follows the write that
// earned it and precedes any fallible cleanup, and a process that dies
// after that cleanup has said it (docs/design.md#announcements). The caller
// goes on from ran.Next until ran.Done. An electing step that does not win
// stops the run (Done, Owned false); an error stops it too and is returned
// wrapped with the transition and step.
func RunFrom(ctx context.Context, p *Pass, d engine.Decision, from int) (Ran, error) {
	before := len(p.earned)
	ran := func(next int, done, owned bool) Ran {
		return Ran{Owned: owned, Done: done, Next: next, Earned: slices.Clip(p.earned[before:])}
	}
	for i := from; i < len(d.Steps); i++ {
		st := d.Steps[i]
		run, ok := registry[st.Action]
		if !ok {
			return ran(i, true, false), fmt.Errorf("transition %s step %d: action %q is not implemented", d.Transition, i+1, st.Action)
		}
		p.electing = st.Elect
		res, err := run(ctx, p, st.Args)
		res.Action = st.Action
		p.Results = append(p.Results, res)
		if err != nil {
			return ran(i, true, false), fmt.Errorf("transition %s step %d (%s): %w", d.Transition, i+1, st.Action, err)
		}
		if p.stale {
			return ran(i, true, false), fmt.Errorf("transition %s step %d (%s): %w", d.Transition, i+1, st.Action, ErrStale)
		}
		if st.Elect && !res.Won() {
			return ran(i+1, true, false), nil
		}
		if len(p.earned) > before && i+1 < len(d.Steps) {
			return ran(i+1, false, false), nil
		}
	}
	return ran(len(d.Steps), true, true), nil
}

// claimAnnotation reads the rotation claim's annotation on the pass's
// newest copy: as this pass last wrote it, or as observed.
func (p *Pass) claimAnnotation(key string) string {
	return p.claim(p.Targets.Claim).Annotations[key]
}

// write is a conditional write decided on obj, the pass's newest copy of
// its target (p.pool, p.claim, p.node): what it writes becomes the newest
// copy; a conflict marks the pass stale and no later write of it is sent.
func (p *Pass) write(ctx context.Context, obj client.Object, mutate conditional.Mutate) (Outcome, error) {
	if p.stale {
		return Stale, nil
	}
	rvBefore := obj.GetResourceVersion()
	confirm := func() (bool, error) { return p.confirmElectionBefore(ctx, obj) }
	out, err := conditional.WriteFromCache(ctx, p.Fresh, p.Client, obj, mutate, confirm)
	switch out {
	case Claimed:
		p.hold(obj)
		p.noteElection(obj, rvBefore)
	case Stale:
		p.stale = true
	}
	return out, err
}

// arg specs shared by the catalog entries.
func str(values ...string) engine.ArgSpec {
	return engine.ArgSpec{Kind: engine.ArgString, Values: values}
}

func required(a engine.ArgSpec) engine.ArgSpec { a.Required = true; return a }

func list(values ...string) engine.ArgSpec {
	return engine.ArgSpec{Kind: engine.ArgStringList, Values: values}
}

var flag = engine.ArgSpec{Kind: engine.ArgBool}
