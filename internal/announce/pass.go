package announce

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// Report is what one pass of one pool has to say besides what its steps
// earned, handed over once the pass has acted
// (docs/architecture.md#one-pass). What a step earned is said through
// Earned as soon as the step has run; the startup sweep says what it did
// through the methods of sweep.go.
type Report struct {
	// View is what the pass observed; nil when the observation stopped on
	// BadState.
	View *View
	// BadState: an anchor that must not be acted on; no step was taken.
	BadState *BadState
	// Undecided: the machines whose row depends on a fact the table could
	// not evaluate; they took no step, the others did.
	Undecided []engine.Decision
	// Decided: each decision the pass ran, for the V(1) trace.
	Decided []Decided
	// RulesVersion: the table the pass decided with, for the V(1)
	// heartbeat.
	RulesVersion int
	// Partial: the pass left some rotation slots' decisions to the next
	// pass (docs/design.md#throughput), so it ends no round of the
	// level-triggered conditions: those slots asserted none.
	Partial bool
}

// Decided is one decision the pass ran: whether it owned what its steps
// wrote, what each step did, and the error that stopped it, if any.
type Decided struct {
	engine.Decision
	Owned   bool
	Results []actions.Result
	Err     error
}

// BadState is a malformed value on the pool that stopped the observation,
// with the pool as read for the Warning's object (nil: not found).
type BadState struct {
	Pool *karpv1.NodePool
	census.BadAnnotation
}

// Pass says what one pass has to say once it has acted: the read errors
// and Warnings of what it observed, the fact it could not decide on and the
// V(1) trace; then it ends the pass's round of the level-triggered
// conditions. A bad-state pass says its Warning alone and ends no round:
// it observed nothing that could clear a condition.
func (a *Announcer) Pass(r Report) error {
	if r.BadState != nil {
		a.badState(r.BadState)
		return nil
	}
	v := r.View
	if v == nil {
		return errors.New("a pass report with neither a view nor a bad state")
	}
	if !r.Partial {
		defer a.seen.endPass(v.Pool.Name)
	}
	a.heartbeat(r.RulesVersion)
	for _, e := range v.ReadErrors {
		a.Log.Error(e, "a read failed; the pass goes on without it", "nodepool", v.Pool.Name)
	}
	a.findings(v)
	a.trace(v.Pool.Name, r.Decided)
	for _, d := range r.Undecided {
		a.warnKeyed(v.Pool.Name, "InvalidAnnotation/fact/"+d.Machine+"/"+d.Undecided.Fact, v.Pool, "InvalidAnnotation", undecided(v, d))
	}
	return nil
}

// undecided is the Warning of a machine that took no step: the objects,
// keys and values the fact read, and why it could not be evaluated.
func undecided(v *View, d engine.Decision) string {
	fe := d.Undecided
	keys := slices.Sorted(maps.Keys(fe.Inputs))
	read := make([]string, 0, len(keys))
	for _, k := range keys {
		switch fe.Objects[k] {
		case "NodeClaim":
			read = append(read, fmt.Sprintf("NodeClaim/%s %s=%q", v.SubjectName, k, fe.Inputs[k]))
		case "NodePool":
			read = append(read, fmt.Sprintf("NodePool/%s %s=%q", v.Pool.Name, k, fe.Inputs[k]))
		}
	}
	from := ""
	if len(read) > 0 {
		from = " reading " + strings.Join(read, ", ")
	}
	return fmt.Sprintf("the %s machine cannot decide: fact %s%s: %v; it takes no step until the value is fixed", d.Machine, fe.Fact, from, fe.Err)
}

// Earned says what a step of the pass that observed v earned, each
// announcement through its one handler, as soon as the step has run
// (actions.RunFrom). An announcement with no handler is an error, never a
// silent no-op (Check refuses to start without one).
func (a *Announcer) Earned(v *View, earned []actions.Earned) error {
	for _, e := range earned {
		h, ok := handlers[e.What]
		if !ok {
			return fmt.Errorf("announcement %q has no handler", e.What)
		}
		h(a, step{view: v, before: e.Before, log: a.Log.WithValues("nodepool", v.Pool.Name, "rotation", v.SubjectName)})
	}
	return nil
}

// trace logs at V(1) what each decision's steps did, and a pass that
// stopped on a stale cache.
func (a *Announcer) trace(pool string, decided []Decided) {
	log := a.Log.V(1)
	if !log.Enabled() {
		return
	}
	log = log.WithValues("nodepool", pool)
	for _, d := range decided {
		did := make([]string, len(d.Results))
		for i, res := range d.Results {
			did[i] = res.Did
		}
		log.Info("pass", "machine", d.Machine, "transition", d.Transition, "owned", d.Owned, "facts", d.Facts, "did", did)
		if errors.Is(d.Err, actions.ErrStale) {
			log.Info("pass stopped on a stale cache", "transition", d.Transition, "error", d.Err.Error())
		}
	}
}

// heartbeat logs at V(1), at most once a minute, that passes are running
// and on which version of the rules table.
func (a *Announcer) heartbeat(rulesVersion int) {
	if !a.Log.V(1).Enabled() {
		return
	}
	now := time.Now()
	if last := a.lastBeat.Load(); last != nil && now.Sub(*last) < time.Minute {
		return
	}
	a.lastBeat.Store(&now)
	a.Log.V(1).Info("heartbeat", "rulesVersion", rulesVersion)
}

// badState reports an anchor that must not be acted on.
func (a *Announcer) badState(b *BadState) {
	if b.Pool == nil {
		return
	}
	a.warnKeyed(b.Pool.Name, "InvalidAnnotation/"+b.Object+"/"+b.Key, b.Pool, "InvalidAnnotation", b.Sentence()+"; no step is taken")
}

// findings emits each schedule warning as a deduplicated Event on the pool
// (fatal findings are logged by idle.infeasible, never evented), ShortLead
// on each claim that cannot get its K chances, SkipPastDeadline on each
// claim an operator's skip keeps past its last usable start, and
// InvalidAnnotation for each malformed value that kept a claim out of the
// census. Every Warning is deduplicated by its object, reason and key (the
// annotation, or the fact), so several at once never take turns re-firing
// and spending the pool's Event budget.
func (a *Announcer) findings(v *View) {
	pool := v.Pool.Name
	if v.Governed {
		for _, f := range v.Findings {
			if f.Severity == schedule.Warning {
				a.warn(pool, v.Pool, f.Reason, f.Message+"; "+f.Remedy)
			}
		}
		for i := range v.Claims {
			c := &v.Claims[i]
			if e := c.Spec.ExpireAfter.Duration; e != nil && v.Derivation.ShortLead(*e) {
				a.warnKeyed(pool, "ShortLead/"+c.Name, c, "ShortLead",
					fmt.Sprintf("expireAfter %s is not longer than K·P + t_rot = %s: the schedule cannot guarantee %d chances; rotated best-effort first",
						schedule.FormatDuration(*e), schedule.FormatDuration(v.Derivation.Lead), v.Settings.MinRotationChances))
			}
			if f := v.Census.Figures[c.Name]; f.SkipsPastLastStart(v.Now) {
				a.warnKeyed(pool, "SkipPastDeadline/"+c.Name, c, "SkipPastDeadline",
					fmt.Sprintf("%s %s is not before its last usable start %s (deadline %s, less t_rot, the windows and the blackouts): it is never rotated gracefully, and Karpenter's expiry will replace it forcefully",
						v1alpha1.AnnotationSkipUntil, f.SkipUntil.UTC().Format(time.RFC3339), f.LastStart.UTC().Format(time.RFC3339), f.Deadline.UTC().Format(time.RFC3339)))
			}
		}
	}
	for _, b := range v.BadAnnotations {
		effect := b.Effect
		if effect == "" {
			effect = "the claim is skipped"
		}
		a.warnKeyed(pool, "InvalidAnnotation/"+b.Object+"/"+b.Key, v.Pool, "InvalidAnnotation",
			fmt.Sprintf("%s: annotation %s=%q is %s; %s", b.Object, b.Key, b.Value, b.Problem, effect))
	}
	if v.Budget.Err != nil {
		// the NodePool's own field, read as Karpenter reads it
		// (docs/design.md#disruption-budget)
		a.warnKeyed(pool, "InvalidBudget", v.Pool, "InvalidBudget",
			fmt.Sprintf("NodePool/%s: %v; counted as allowing no disruption, as Karpenter counts it", pool, v.Budget.Err))
	}
}
