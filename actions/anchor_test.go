package actions

import (
	"testing"
	"time"
)

func TestAnchorWriteOnlyIfAbsent(t *testing.T) {
	// The pool already names this very claim: a second start pass must not
	// elect itself (it would re-announce RotationStarted).
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "draining")))
	res, err := step(e.pass(e.targets()), "anchor-write", map[string]any{"mode": "surge"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != Raced || res.Won() {
		t.Fatalf("outcome %s, want raced", res.Outcome)
	}
	// the running rotation's mirror is not cleared by the losing pass
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, claimA, keyMirror, "draining"))
}

func TestAnchorWriteModes(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want map[string]string
	}{
		{"surge", ann(keyAnchor, claimA, keyMode, "", keyMirror, "pending", keyDraining, "")}, // the start marker
		{"forcefulFallback", ann(keyAnchor, claimA, keyMode, "forceful-fallback", keyMirror, "draining", keyDraining, nowStamp)},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			e := newEnv(t, mkPool(poolName, ann(keyDraining, "2026-01-01T00:00:00Z")))
			res, err := step(e.pass(e.targets()), "anchor-write", map[string]any{"mode": tc.mode})
			if err != nil || res.Outcome != Claimed {
				t.Fatalf("%s %v", res.Outcome, err)
			}
			wantAnn(t, "pool", e.pool(poolName).Annotations, tc.want)
			if len(e.writes) != 1 {
				t.Fatalf("writes %v, want everything in one write", e.writes)
			}
		})
	}
}

func TestAnchorReleaseReadsTheOutcomeFromTheFreshCopy(t *testing.T) {
	for _, tc := range []struct {
		name            string
		observed, fresh map[string]string
		want            string
		lastRotation    string
	}{
		{
			name:     "mirror on the fresh copy: success",
			observed: ann(keyAnchor, claimA), // the observation predates the mirror
			fresh: ann(keyAnchor, claimA, keyMirror, "draining", keyDraining, "2026-11-30T09:00:00Z",
				keySurgeWait, "4m0s", keySurgeNode, "node-b", keyMode, "forceful-fallback"),
			want: "success", lastRotation: nowStamp,
		},
		{
			name:     "no mirror on the fresh copy: expired",
			observed: ann(keyAnchor, claimA, keyMirror, "draining"), // a stale observation
			fresh:    ann(keyAnchor, claimA, keyLastRot, "2026-10-01T00:00:00Z"),
			want:     "expired", lastRotation: "2026-10-01T00:00:00Z",
		},
		{
			name:     "a drain nobody governed is no success, whoever governs now",
			observed: ann(keyAnchor, claimA, keyMirror, "draining"),
			fresh:    ann(keyAnchor, claimA, keyMirror, "governance-lost", keyDraining, "2026-11-30T09:00:00Z", keySurgeWait, "4m0s"),
			want:     "governance-lost",
		},
		{
			name:     "a mirror of another value is no success",
			observed: ann(keyAnchor, claimA),
			fresh:    ann(keyAnchor, claimA, keyMirror, "pending"),
			want:     "expired",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mkPool(poolName, tc.fresh))
			targets := e.targets()
			targets.Pool = mkPool(poolName, tc.observed)
			res, err := step(e.pass(targets), "anchor-release", nil)
			if err != nil || res.Outcome != Claimed {
				t.Fatalf("%s %v", res.Outcome, err)
			}
			if res.Released == nil || res.Released.Outcome != tc.want {
				t.Fatalf("released %+v, want outcome %q", res.Released, tc.want)
			}
			rel := res.Released
			for k, got := range map[string]string{keyDraining: rel.DrainingAt, keySurgeWait: rel.SurgeWait, keyMode: rel.Mode, keySurgeNode: rel.SurgeNode} {
				if got != tc.fresh[k] {
					t.Errorf("released %s = %q, want %q (the fresh copy's)", k, got, tc.fresh[k])
				}
			}
			a := e.pool(poolName).Annotations
			wantAnn(t, "pool", a, ann(keyAnchor, "", keyMirror, "", keyDraining, "", keySurgeWait, "", keyMode, ""))
			if a[keyLastRot] != tc.lastRotation {
				t.Errorf("last-rotation-at %q, want %q", a[keyLastRot], tc.lastRotation)
			}
		})
	}
}

func TestAnchorReleaseRacedReportsNoOutcome(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, "claim-other", keyMirror, "draining")))
	res, err := step(e.pass(e.targets()), "anchor-release", nil)
	if err != nil || res.Outcome != Raced {
		t.Fatalf("%s %v", res.Outcome, err)
	}
	if res.Released != nil {
		t.Fatalf("a raced release reports %+v: only the releasing pass may announce an outcome", res.Released)
	}
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, "claim-other", keyMirror, "draining", keyLastRot, ""))
}

func TestAnchorClearLastFailureAt(t *testing.T) {
	const (
		earlier = "2026-11-29T10:00:00Z"
		later   = "2026-11-30T09:00:00Z"
	)
	for _, tc := range []struct {
		name      string
		mode      any // the lastFailureAt argument; nil when absent
		poolValue string
		claimAnn  map[string]string
		written   map[string]string // the claim's annotations as an earlier write of the pass left them
		want      string            // "" means absent
	}{
		{name: "absent: not stamped", poolValue: "", want: ""},
		{name: "absent: the pool's kept", poolValue: earlier, want: earlier},
		{name: "now", mode: "now", poolValue: later, want: nowStamp},
		{name: "max: claim later", mode: "max", poolValue: earlier, claimAnn: ann(keyFailed, later), want: later},
		{name: "max: pool later", mode: "max", poolValue: later, claimAnn: ann(keyFailed, earlier), want: later},
		{name: "max: pool unset", mode: "max", claimAnn: ann(keyFailed, earlier), want: earlier},
		{name: "max: claim unset", mode: "max", poolValue: earlier, want: earlier},
		{name: "max: malformed claim loses", mode: "max", poolValue: earlier, claimAnn: ann(keyFailed, "yesterday"), want: earlier},
		{name: "max: malformed pool loses", mode: "max", poolValue: "soon", claimAnn: ann(keyFailed, earlier), want: earlier},
		{name: "max: both unset", mode: "max", want: ""},
		{
			name: "max: this pass's failure write wins over the observed claim", mode: "max", poolValue: earlier,
			claimAnn: ann(keyFailed, earlier),
			written:  ann(keyFailed, later),
			want:     later,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pa := ann(keyAnchor, claimA, keyMirror, "draining")
			if tc.poolValue != "" {
				pa[keyLastFail] = tc.poolValue
			}
			e := newEnv(t, mkPool(poolName, pa), mkClaim(claimA, tc.claimAnn))
			p := e.pass(e.targets())
			holdWritten(p, tc.written)
			args := map[string]any{}
			if tc.mode != nil {
				args["lastFailureAt"] = tc.mode
			}
			res, err := step(p, "anchor-clear", args)
			if err != nil || res.Outcome != Claimed {
				t.Fatalf("%s %v", res.Outcome, err)
			}
			a := e.pool(poolName).Annotations
			wantAnn(t, "pool", a, ann(keyAnchor, "", keyMirror, ""))
			if got, ok := a[keyLastFail]; got != tc.want || (tc.want == "" && ok) {
				t.Fatalf("last-failure-at %q (present %v), want %q", got, ok, tc.want)
			}
		})
	}
}

func TestAnchorClearOnlyWhileItNamesThisRotation(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, "claim-other", keyMirror, "draining", keyDraining, "x")))
	res, err := step(e.pass(e.targets()), "anchor-clear", map[string]any{"lastFailureAt": "now"})
	if err != nil || res.Outcome != Raced {
		t.Fatalf("%s %v", res.Outcome, err)
	}
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, "claim-other", keyMirror, "draining", keyDraining, "x", keyLastFail, ""))
}

func TestLaterFailure(t *testing.T) {
	cases := []struct{ pool, claim, want string }{
		{"2026-11-30T10:00:00Z", "2026-11-30T11:00:00Z", "2026-11-30T11:00:00Z"},
		{"2026-11-30T12:00:00Z", "2026-11-30T11:00:00Z", "2026-11-30T12:00:00Z"},
		{"2026-11-30T12:00:00Z", "2026-11-30T12:00:00Z", "2026-11-30T12:00:00Z"},
		{"", "2026-11-30T11:00:00Z", "2026-11-30T11:00:00Z"},
		{"garbage", "2026-11-30T11:00:00Z", "2026-11-30T11:00:00Z"},
		{"2026-11-30T12:00:00Z", "garbage", "2026-11-30T12:00:00Z"},
		{"2026-11-30T12:00:00Z", "", "2026-11-30T12:00:00Z"},
		{"garbage", "garbage", ""},
		{"", "", ""},
		// compared as instants, not as strings
		{"2026-11-30T12:00:00+02:00", "2026-11-30T11:00:00Z", "2026-11-30T11:00:00Z"},
	}
	for _, c := range cases {
		if got := laterFailure(c.pool, c.claim); got != c.want {
			t.Errorf("laterFailure(%q, %q) = %q, want %q", c.pool, c.claim, got, c.want)
		}
	}
}

func TestPoolMirror(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     map[string]any
		pool     map[string]string
		claim    map[string]string
		written  map[string]string
		want     map[string]string
		noWrites bool
	}{
		{
			name: "mirror only", pool: ann(keyAnchor, claimA),
			want: ann(keyMirror, "draining", keyDraining, "", keySurgeWait, ""),
		},
		{
			name: "draining-at and surge-wait stamped", args: map[string]any{"drainingAt": true, "surgeWait": true},
			pool: ann(keyAnchor, claimA), claim: ann(keyStarted, "2026-11-30T09:55:30Z"),
			want: ann(keyMirror, "draining", keyDraining, nowStamp, keySurgeWait, "4m30s"),
		},
		{
			name: "written once: earlier values kept", args: map[string]any{"drainingAt": true, "surgeWait": true},
			pool:  ann(keyAnchor, claimA, keyMirror, "draining", keyDraining, "2026-11-30T09:58:00Z", keySurgeWait, "1m0s"),
			claim: ann(keyStarted, "2026-11-30T09:00:00Z"),
			want:  ann(keyMirror, "draining", keyDraining, "2026-11-30T09:58:00Z", keySurgeWait, "1m0s"), noWrites: true,
		},
		{
			name: "surge-wait from the started-at this pass stamped", args: map[string]any{"surgeWait": true},
			pool:    ann(keyAnchor, claimA),
			written: ann(keyStarted, "2026-11-30T09:59:00Z"),
			want:    ann(keyMirror, "draining", keySurgeWait, "1m0s"),
		},
		{
			name: "no surge-wait without a readable started-at", args: map[string]any{"surgeWait": true},
			pool: ann(keyAnchor, claimA), claim: ann(keyStarted, "not-a-time"),
			want: ann(keyMirror, "draining", keySurgeWait, ""),
		},
		{
			name: "flags false write nothing extra", args: map[string]any{"drainingAt": false, "surgeWait": false},
			pool: ann(keyAnchor, claimA), claim: ann(keyStarted, "2026-11-30T09:00:00Z"),
			want: ann(keyMirror, "draining", keyDraining, "", keySurgeWait, ""),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mkPool(poolName, tc.pool), mkClaim(claimA, tc.claim))
			p := e.pass(e.targets())
			holdWritten(p, tc.written)
			res, err := step(p, "pool-mirror", tc.args)
			if err != nil || res.Outcome != Claimed {
				t.Fatalf("%s %v", res.Outcome, err)
			}
			wantAnn(t, "pool", e.pool(poolName).Annotations, tc.want)
			if tc.noWrites && len(e.writes) != 0 {
				t.Fatalf("writes %v, want none: everything was in place", e.writes)
			}
		})
	}
}

// Running every pool write twice — again on the same observation (stale),
// then on one that caught up — leaves the pool as the first run left it.
func TestPoolWritesIdempotent(t *testing.T) {
	steps := []struct {
		action string
		args   map[string]any
	}{
		{"anchor-write", map[string]any{"mode": "forcefulFallback"}},
		{"pool-mirror", map[string]any{"drainingAt": true, "surgeWait": true}},
		{"anchor-release", nil},
	}
	e := newEnv(t, mkPool(poolName, nil), mkClaim(claimA, ann(keyStarted, "2026-11-30T09:00:00Z")))
	for _, s := range steps {
		targets := e.targets()
		first, err := step(e.pass(targets), s.action, s.args)
		if err != nil || first.Outcome != Claimed {
			t.Fatalf("%s: %s %v", s.action, first.Outcome, err)
		}
		after := e.state()
		again, err := step(e.pass(targets), s.action, s.args)
		if err != nil || again.Outcome != Stale {
			t.Fatalf("%s on the same observation: %s %v, want stale", s.action, again.Outcome, err)
		}
		second, err := step(e.pass(e.targets()), s.action, s.args)
		if err != nil {
			t.Fatal(err)
		}
		if e.state() != after {
			t.Fatalf("%s: a second run changed the pool", s.action)
		}
		if second.Outcome == Claimed && s.action != "pool-mirror" {
			t.Fatalf("%s: the second run claimed again", s.action)
		}
	}
	// after a release, the rotation-scoped set is gone and the success stamped
	np := e.pool(poolName)
	wantAnn(t, "pool", np.Annotations, ann(keyAnchor, "", keyMirror, "", keyMode, "", keyDraining, "", keySurgeWait, "", keyLastRot, nowStamp))
}

// A successful surge rotation adds its surge wait + drain to the pool's
// recent-rotations in the releasing write (docs/design.md#window-end); a
// surge-less one, an expiry or a garbled record adds nothing.
func TestAnchorReleaseRecordsTheRotationTime(t *testing.T) {
	drainingAt := now.Add(-6 * time.Minute).Format(time.RFC3339)
	for _, tc := range []struct {
		name string
		pool map[string]string
		want string
	}{
		{"a surge rotation: 4m wait + 6m drain", ann(keyAnchor, claimA, keyMirror, "draining", keyDraining, drainingAt, keySurgeWait, "4m0s",
			keyRecent, "9m0s"), "9m0s,10m0s"},
		{"surge-less: nothing learned", ann(keyAnchor, claimA, keyMirror, "draining", keyDraining, drainingAt, keySurgeWait, "4m0s",
			keyMode, "forceful-fallback", keyRecent, "9m0s"), "9m0s"},
		{"an expiry: nothing learned", ann(keyAnchor, claimA, keyDraining, drainingAt, keySurgeWait, "4m0s", keyRecent, "9m0s"), "9m0s"},
		{"a garbled surge-wait: nothing learned", ann(keyAnchor, claimA, keyMirror, "draining", keyDraining, drainingAt, keySurgeWait, "a while"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mkPool(poolName, tc.pool))
			if res, err := step(e.pass(e.targets()), "anchor-release", nil); err != nil || res.Outcome != Claimed {
				t.Fatalf("%s %v", res.Outcome, err)
			}
			if got := e.pool(poolName).Annotations[keyRecent]; got != tc.want {
				t.Errorf("recent-rotations %q, want %q", got, tc.want)
			}
		})
	}
}

// The governance-lost mirror is written once, by the pass it elects to say
// GovernanceLost; no draining mirror write turns it back into a drain that
// would count as a success, and the clear reports it.
func TestGovernanceLostMirror(t *testing.T) {
	lost := map[string]any{"state": "governance-lost"}
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "draining", keyDraining, "2026-11-30T09:00:00Z")), mkClaim(claimA, nil))
	if res, err := step(e.pass(e.targets()), "pool-mirror", lost); err != nil || !res.Won() {
		t.Fatalf("first hold pass: %s %v, want it elected", res.Outcome, err)
	}
	if res, err := step(e.pass(e.targets()), "pool-mirror", lost); err != nil || res.Won() {
		t.Fatalf("second hold pass: %s %v, want it not elected (said once)", res.Outcome, err)
	}
	for _, args := range []map[string]any{nil, {"drainingAt": true, "surgeWait": true, "surgeNode": true}} {
		if _, err := step(e.pass(e.targets()), "pool-mirror", args); err != nil {
			t.Fatal(err)
		}
	}
	// nor does an expiry overwrite the hold's record
	if res, _ := step(e.pass(e.targets()), "pool-mirror", map[string]any{"state": "expired"}); res.Won() {
		t.Fatal("an expiry overwrote the governance-lost record")
	}
	wantAnn(t, "pool", e.pool(poolName).Annotations, ann(keyAnchor, claimA, keyMirror, "governance-lost", keyDraining, "2026-11-30T09:00:00Z"))
	res, err := step(e.pass(e.targets()), "anchor-clear", nil)
	if err != nil || res.Outcome != Claimed || res.Mirror != "governance-lost" {
		t.Fatalf("clear: %s %v, mirror %q; want claimed, governance-lost", res.Outcome, err, res.Mirror)
	}
	// an expiry recorded first is never overwritten by the hold
	e = newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "expired")), mkClaim(claimA, nil))
	if res, _ := step(e.pass(e.targets()), "pool-mirror", lost); res.Won() {
		t.Fatal("the hold overwrote a recorded expiry")
	}
}
