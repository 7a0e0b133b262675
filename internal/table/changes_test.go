package table_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/table"
	"github.com/noderotation/node-rotation-controller/rules"
)

// With the observation held and only the clock moving, every fact of the
// shipped table changes value only at an instant its changesAt declares,
// and holds the new value from that instant on: the controller wakes at
// the declared instants (docs/design.md#requeue-instants), so a change
// between them would go unseen until the backstop pass.
func TestFactsChangeOnlyAtDeclaredInstants(t *testing.T) {
	e, err := table.Load()
	if err != nil {
		t.Fatal(err)
	}
	bad, changed := undeclaredChanges(e, 400)
	if len(bad) > 0 {
		t.Errorf("%d undeclared changes, first: %s", len(bad), bad[0])
	}
	// every fact that declares changesAt was seen to change: the generated
	// snapshots reach it, so the check above is not vacuous for it
	for _, f := range e.Table().Facts {
		if len(f.ChangesAt) > 0 && !changed[f.Name] {
			t.Errorf("fact %s never changed value in the generated snapshots: extend generate", f.Name)
		}
	}
}

// The check finds an instant the table leaves out, and one it declares a
// moment early (before the new value holds).
func TestAnUndeclaredChangeIsFound(t *testing.T) {
	for _, c := range []struct{ name, from, to, fact string }{
		{"the cooldown's end left out", "      - timestamp(pool.lastRotationAt) + policy.cooldownAfter\n", "", "startGate"},
		{"the ready timeout declared at its last false instant",
			`changesAt: ['timestamp(claim.startedAt) + policy.readyTimeout + duration("1ns")']`,
			`changesAt: ['timestamp(claim.startedAt) + policy.readyTimeout']`, "readyTimeoutElapsed"},
		{"the backoff's end declared a second late", `changesAt: [claim.retryAt]`, `changesAt: ['claim.retryAt + duration("1s")']`, "retryDue"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := string(rules.Table)
			if !strings.Contains(src, c.from) {
				t.Fatalf("test setup: %q not in the rules table", c.from)
			}
			e, err := table.LoadTable([]byte(strings.Replace(src, c.from, c.to, 1)))
			if err != nil {
				t.Fatal(err)
			}
			bad, _ := undeclaredChanges(e, 400)
			if len(bad) == 0 {
				t.Fatal("no undeclared change found")
			}
			for _, b := range bad {
				if !strings.HasPrefix(b, c.fact+" ") {
					t.Errorf("found in another fact: %s", b)
				}
			}
		})
	}
}

// grid is the step the generated instants and durations are multiples of:
// every threshold a fact computes from them lies on it, and the samples
// probe each grid point a nanosecond and a second either side.
const grid = 10 * time.Minute

var origin = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// undeclaredChanges evaluates, on n generated snapshots, every fact that
// declares changesAt or is computed in Go at the grid's samples and its
// declared instants, and lists, per snapshot and fact, the first change
// between two consecutive samples with no declared instant in (earlier,
// later]; and the facts it saw change at all.
func undeclaredChanges(e *engine.Engine, n int) (bad []string, changed map[string]bool) {
	var timed []string
	for _, f := range e.Table().Facts {
		if len(f.ChangesAt) > 0 || f.Observer != "" {
			timed = append(timed, f.Name)
		}
	}
	rng := rand.New(rand.NewPCG(31, 3))
	changed = map[string]bool{}
	for range n {
		s := generate(rng)
		for _, name := range timed {
			declared, err := e.ChangesAt(&s, name)
			if err != nil {
				panic(err) // the name comes from the table itself
			}
			d, moved := check(e, s, name, declared)
			if d != "" {
				bad = append(bad, d)
			}
			changed[name] = changed[name] || moved
		}
	}
	return bad, changed
}

// check samples one fact over the clock: the first undeclared change, and
// whether its value changed at all.
func check(e *engine.Engine, s engine.Snapshot, name string, declared []time.Time) (string, bool) {
	samples := samplesAround(declared)
	var prev any
	moved := false
	for i, at := range samples {
		s.Now = at
		v, err := e.Evaluate(&s, name)
		if err != nil {
			return fmt.Sprintf("%s at %s: %v", name, at, err), moved
		}
		if i > 0 && v != prev {
			moved = true
			if !slices.ContainsFunc(declared, func(d time.Time) bool { return d.After(samples[i-1]) && !d.After(at) }) {
				return fmt.Sprintf("%s changes from %v to %v between %s and %s; declared %v; snapshot %+v", name, prev, v, samples[i-1].Format(time.RFC3339Nano), at.Format(time.RFC3339Nano), declared, s), moved
			}
		}
		prev = v
	}
	return "", moved
}

// samplesAround: each grid point from 3h before the origin to 5h after it,
// a nanosecond and a second either side, and each declared instant with
// the nanosecond before it; sorted.
func samplesAround(declared []time.Time) []time.Time {
	var out []time.Time
	for at := origin.Add(-3 * time.Hour); !at.After(origin.Add(5 * time.Hour)); at = at.Add(grid) {
		out = append(out, at.Add(-time.Second), at.Add(-time.Nanosecond), at, at.Add(time.Nanosecond), at.Add(time.Second))
	}
	for _, d := range declared {
		out = append(out, d.Add(-time.Nanosecond), d)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return slices.Compact(out)
}

// generate draws a snapshot whose instants lie on the grid within 2h of
// the origin (or are unset) and whose durations are grid multiples up to
// 2h, with every other input — the state, governance, the Go-computed
// facts — drawn at random, so every fact's clock-reading branch is
// reached.
func generate(rng *rand.Rand) engine.Snapshot {
	at := func() time.Time { return origin.Add(time.Duration(rng.IntN(25)-12) * grid) }
	stamp := func() string {
		if rng.IntN(4) == 0 {
			return ""
		}
		return at().Format(time.RFC3339)
	}
	dur := func() engine.Duration { return engine.Duration(time.Duration(rng.IntN(13)) * grid) }
	flip := func() bool { return rng.IntN(2) == 0 }
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	s := engine.Snapshot{
		Pool: engine.PoolObservation{
			Governance: pick("governed", "governed", "ungoverned", "conflict", "invalid"), Static: rng.IntN(8) == 0, Feasible: rng.IntN(8) > 0,
			WindowOpen: rng.IntN(4) > 0, WindowEnding: rng.IntN(5) == 0, Blackout: rng.IntN(5) == 0, BlackoutSinceStamp: rng.IntN(5) == 0,
			ClusterCapReached: rng.IntN(5) == 0, Anchor: pick("", "general-a"), RotationState: pick("", "pending", "draining", "expired"),
			RotationMode: pick("", "forceful-fallback"),
			Freeze:       stamp(), LastRotationAt: stamp(), LastFailureAt: stamp(), WindowOpenedAt: stamp(),
			DrainingAt: stamp(), PrePull: pick("", "", "", `{"ended":"timeout"}`),
		},
		Policy:    engine.PolicyObservation{ReadyTimeout: dur(), CooldownAfter: dur(), FailurePause: dur(), DrainBound: dur(), PrePull: rng.IntN(4) > 0, PrePullTimeout: dur()},
		Candidate: pick("none", "surge", "forcefulFallback"), CandidateDrainBlocked: flip(), CandidateRequested: flip(), SkipHeld: flip(),
		Stranded: pick("", "claim", "artefacts"), Outstanding: rng.IntN(2),
		Claim: engine.ClaimObservation{
			Exists: rng.IntN(5) > 0, State: pick("", "pending", "draining", "failed", "expired", "half-done"), StartedAt: stamp(), FailedAt: stamp(),
			RetryCount: "1", Deleting: flip(), DeletedAt: at(), RetryAt: at(),
		},
		Surge: engine.SurgeObservation{PlaceholderExists: flip(), PairedNodes: flip(), Ready: flip(), Headroom: flip(), Unservable: pick("", "", "Unschedulable"),
			PrePull: pick("", "absent", "running", "running", "ended")},
	}
	if s.Claim.FailedAt == "" {
		s.Claim.RetryAt = time.Time{}
	}
	return s
}
