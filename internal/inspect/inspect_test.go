package inspect

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/internal/inspect/inspecttest"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func statuses(t *testing.T, in *Inspector) []*PoolStatus {
	t.Helper()
	names, err := in.PoolNames(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, inspecttest.Pools()) {
		t.Fatalf("PoolNames = %v, want the scripted %v", names, inspecttest.Pools())
	}
	out := make([]*PoolStatus, 0, len(names))
	for _, n := range names {
		st, err := in.Status(context.Background(), n)
		if err != nil {
			t.Fatalf("status of %s: %v", n, err)
		}
		out = append(out, st)
	}
	return out
}

func byPool(sts []*PoolStatus) map[string]*PoolStatus {
	m := map[string]*PoolStatus{}
	for _, s := range sts {
		m[s.NodePool] = s
	}
	return m
}

// TestStatusOfEveryPoolState checks what status says of each scripted pool,
// then the rendering of all of them against the golden files.
func TestStatusOfEveryPoolState(t *testing.T) {
	sts := statuses(t, inspector(t, scripted()...))
	m := byPool(sts)
	checks := []struct {
		pool, governance, gate, rotation string
		until                            time.Time
	}{
		{"ready", "governed", "open", "idle.start", time.Time{}},
		{"cooling", "governed", "cooldown", "idle.gated", now.Add(15 * time.Minute)},
		{"failing", "governed", "failurePause", "idle.gated", now.Add(11 * time.Minute)},
		// frozen for 12h, then the window is open (21:00–01:00 UTC)
		{"frozen-night", "governed", "windowClosed", "idle.gated", time.Date(2026, 12, 2, 21, 0, 0, 0, time.UTC)},
		{"day", "governed", "open", "idle.start", time.Time{}},
		{"static", "governed", "open", "idle.static-pool", time.Time{}},
		{"lost", "governed", "open", "idle.readopt", time.Time{}},
		{"strict", "governed", "open", "idle.infeasible", time.Time{}},
		{"frozen", "governed", "frozen", "idle.gated", now.Add(2 * time.Hour)},
		{"busy", "governed", "open", "pending.await-surge", time.Time{}},
		// 22:00 in Berlin is 21:00 UTC in December
		{"night", "governed", "windowClosed", "idle.gated", time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC)},
		{"tied", "conflict", "", "idle.policy-conflict", time.Time{}},
		{"invalid", "invalid", "", "idle.policy-invalid", time.Time{}},
		{"plain", "ungoverned", "", "idle.ungoverned", time.Time{}},
	}
	for _, c := range checks {
		st := m[c.pool]
		if st == nil {
			t.Fatalf("no row for %s", c.pool)
		}
		if st.Governance != c.governance || st.Gate != c.gate || st.Transitions["rotation"] != c.rotation || !st.GateUntil.Equal(c.until) {
			t.Errorf("%s: governance %s, gate %s until %v, rotation %s; want %s, %s until %v, %s",
				c.pool, st.Governance, st.Gate, st.GateUntil, st.Transitions["rotation"], c.governance, c.gate, c.until, c.rotation)
		}
	}
	// the short-lead claim goes first, though ready-a's deadline is later
	if r := m["ready"]; r.Next == nil || r.Next.NodeClaim != "ready-e" || r.Census.Candidates != 3 || r.Census.NotDue != 1 || r.Census.NoDeadline != 1 || r.Census.ShortLead != 1 {
		t.Errorf("ready: next %+v, census %+v", r.Next, r.Census)
	}
	// three rotations at t_rot_est (5m provisioning + 10m drain) + 10m
	// cooldown apart in a 24/7 window: the third starts at +50m, ends at +65m
	if f := m["ready"].Forecast; f == nil || f.Rotations != 3 || !f.Done.Equal(now.Add(65*time.Minute)) || f.Occurrences != 1 {
		t.Errorf("ready forecast %+v", f)
	}
	if d := m["day"].Window; d == nil || !d.Open || !d.Closes.Equal(time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC)) || !d.Opened.Equal(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("day window %+v", d)
	}
	for pool, why := range map[string]string{"static": "static pool", "strict": "infeasible"} {
		if st := m[pool]; st.Blocked != why || st.Forecast != nil {
			t.Errorf("%s: blocked %q, forecast %+v; want %q and none", pool, st.Blocked, st.Forecast, why)
		}
	}
	if f := m["frozen-night"].Forecast; f == nil || !f.Start(0).Equal(time.Date(2026, 12, 2, 21, 0, 0, 0, time.UTC)) {
		t.Errorf("frozen-night forecast %+v: its first start is when the freeze ends inside a window", f)
	}
	// busy: the rotation in flight ends at its estimate (+12m) and the
	// cooldown (+10m); the one candidate starts then
	if f := m["busy"].Forecast; f == nil || len(f.Starts) != 1 || !f.Starts[0].Equal(now.Add(22*time.Minute)) {
		t.Errorf("busy forecast %+v", f)
	}
	// pair: each slot is free once its own rotation ends — at the 15m
	// estimate from its start, then the 10m cooldown: pair-b's, started
	// 10m ago, at +15m; pair-a's, started 2m ago, at +23m (one slot's end
	// for both would say +23m for both)
	if f := m["pair"].Forecast; f == nil || len(f.Starts) != 2 || !f.Starts[0].Equal(now.Add(15*time.Minute)) || !f.Starts[1].Equal(now.Add(23*time.Minute)) {
		t.Errorf("pair forecast %+v", f)
	}
	// overrun's rotation is past its readyTimeout: it fails now, the next
	// start follows the failure pause (15m, not the 20m cooldown), and the
	// failed claim is one more rotation
	if f := m["overrun"].Forecast; f == nil || !f.Start(0).Equal(now.Add(15*time.Minute)) || f.Rotations != 2 {
		t.Errorf("overrun forecast %+v", f)
	}
	// starting-a is anchored, its state not yet written: in flight, not next
	if st := m["starting"]; st.Next == nil || st.Next.NodeClaim != "starting-b" || st.Census.Candidates != 1 || st.Census.InFlight != 1 || st.Forecast.Rotations != 1 {
		t.Errorf("starting: next %+v, census %+v, forecast %+v", st.Next, st.Census, st.Forecast)
	}
	if f := m["busy"].InFlight; f == nil || f.NodeClaim != "busy-a" || f.State != "pending" || !f.StartedAt.Equal(now.Add(-3*time.Minute)) || f.SurgeNode != "node-busy-surge" {
		t.Errorf("busy in flight %+v", f)
	}
	if n := m["night"]; n.Census.Candidates != 1 || n.Census.InBackoff != 1 || n.Census.OptedOut != 1 || n.Census.NotReady != 1 || n.Window.Zone != "Europe/Berlin" {
		t.Errorf("night: census %+v, window %+v", n.Census, n.Window)
	}
	// night-a expires in 3h; the window opens in 9h
	if n := m["night"].Next; n == nil || n.NodeClaim != "night-a" || !n.ExpiresFirst || m["busy"].Next.ExpiresFirst {
		t.Errorf("night's next %+v should expire first, busy's %+v not", n, m["busy"].Next)
	}
	if g := m["garbled"]; !strings.Contains(g.Problem, `noderotation.io/freeze="next tuesday"`) {
		t.Errorf("garbled: problem %q", g.Problem)
	}
	for _, format := range Formats {
		var b bytes.Buffer
		if err := RenderStatus(&b, sts, format); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "status."+format), b.Bytes())
	}
}

// TestExplainClaims checks each claim's class, its reason's key words and
// its place, then the rendered explanations against the golden files.
func TestExplainClaims(t *testing.T) {
	in := inspector(t, scripted()...)
	checks := []struct {
		claim, class, words string
		place               int
	}{
		{"ready-e", census.ClassCandidate, "the next candidate (short-lead claims first", 1},
		{"ready-a", census.ClassCandidate, "2 in line", 2},
		{"ready-b", census.ClassCandidate, "3 in line", 3},
		{"ready-c", census.ClassNotDue, "not due until", 0},
		{"ready-d", census.ClassNoDeadline, "expireAfter is Never", 0},
		{"cooling-a", census.ClassCandidate, "the cooldown gate holds the pool, every gate open at 2026-12-01T12:15:00Z", 1},
		{"static-a", census.ClassCandidate, "the pool starts no rotation: static pool", 1},
		{"starting-a", census.ClassInFlight, "its rotation has just started", 0},
		{"starting-b", census.ClassCandidate, "waits for the rotation of starting-a", 1},
		{"lost-a", census.ClassInFlight, "the pool lost its anchor: the next pass writes the anchor back", 0},
		{"busy-a", census.ClassInFlight, "the pool's rotation in flight (state pending, pending.await-surge)", 0},
		{"busy-b", census.ClassCandidate, "waits for the rotation of busy-a", 1},
		{"night-a", census.ClassCandidate, "the windowClosed gate holds the pool, every gate open at 2026-12-01T21:00:00Z; forecast start 2026-12-01T21:00:00Z; its forced expiry comes before", 1},
		{"night-b", census.ClassInBackoff, "in retryBackoff until 2026-12-01T12:20:00Z", 0},
		{"night-c", census.ClassOptedOut, "node-night-c carries karpenter.sh/do-not-disrupt=true", 0},
		{"night-d", census.ClassNotReady, "Ready condition is not True", 0},
		{"asked-a", census.ClassCandidate, "the next candidate: an operator's noderotation.io/rotate-next asks for it", 1},
		{"asked-b", census.ClassSkipped, "skip-until keeps it out until 2026-12-01T15:00:00Z, past its last usable start 2026-12-01T11:33:00Z", 0},
		{"closing-a", census.ClassCandidate, "the windowEnding gate holds the pool (not starting: 9m left in the window, forecast 14m), every gate open at 2026-12-02T08:00:00Z", 1},
		{"guarded-a", census.ClassDrainBlocked, "Pods on its Node node-guarded-a would block Karpenter's drain (" + inspecttest.Namespace + "/batch-job: do-not-disrupt): passed over", 0},
		{"guarded-b", census.ClassCandidate, "the next candidate", 1},
		{"tied-a", "conflict", "policies tie-a, tie-b tie", 0},
		{"plain-a", "ungoverned", "no RotationPolicy selects", 0},
		{"wide-a", census.ClassInFlight, "the pool's rotation in flight (state pending, pending.create-placeholder); its surge must be ready by", 0},
		{"wide-b", census.ClassCandidate, "2 of 3 rotations in flight, slot 2 is free: the next start takes it", 1},
		{"wide-c", census.ClassInFlight, "the pool's rotation in flight (state draining, draining.delete-claim)", 0},
		{"budgeted-a", census.ClassCandidate, `the disruptionBudget gate holds the pool (NodePool budget nodes=0 (schedule "0 9 * * *" for 8h), until 2026-12-01 17:00 UTC allows 0 disrupted at once; 0 disrupted now (none)), every gate open at 2026-12-01T17:00:00Z`, 1},
	}
	var names []string
	for _, c := range checks {
		names = append(names, c.claim)
	}
	if !slices.Equal(names, inspecttest.ExplainedClaims) {
		t.Fatalf("the checks %v are not the explained claims %v", names, inspecttest.ExplainedClaims)
	}
	var all bytes.Buffer
	for _, c := range checks {
		ex, err := in.ExplainClaim(context.Background(), c.claim)
		if err != nil {
			t.Fatalf("%s: %v", c.claim, err)
		}
		if ex.Class != c.class || ex.Place != c.place || !strings.Contains(ex.Reason, c.words) {
			t.Errorf("%s: class %s, place %d, reason %q; want %s, %d, %q", c.claim, ex.Class, ex.Place, ex.Reason, c.class, c.place, c.words)
		}
		all.WriteString("$ rotationctl explain nodeclaim/" + c.claim + "\n")
		if err := RenderClaim(&all, ex, "table"); err != nil {
			t.Fatal(err)
		}
		all.WriteString("\n")
	}
	golden.Check(t, filepath.Join("testdata", "explain-claims.table"), all.Bytes())
	// the earliest start: ready-c's age trigger in a 24/7 window; night-b's
	// backoff ends at 12:20, the window opens at 21:00 UTC
	for name, want := range map[string]time.Time{"ready-c": now.Add(10*24*time.Hour - 49*time.Minute), "night-b": time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC), "ready-e": {}} {
		ex, err := in.ExplainClaim(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		if !ex.EarliestStart.Equal(want) {
			t.Errorf("%s: earliest start %v, want %v", name, ex.EarliestStart, want)
		}
	}
	if _, err := in.ExplainClaim(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a missing claim: %v", err)
	}
}

// TestExplainPools checks that a pool's explanation carries the pass's
// decisions with the facts they read, then the golden files.
func TestExplainPools(t *testing.T) {
	in := inspector(t, scripted()...)
	var all bytes.Buffer
	for _, p := range inspecttest.ExplainedPools {
		ex, err := in.ExplainPool(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if p != "garbled" && len(ex.Decisions) != 3 {
			t.Errorf("%s: %d decisions, want rotation, window and coverage", p, len(ex.Decisions))
		}
		all.WriteString("$ rotationctl explain nodepool/" + p + "\n")
		if err := RenderPool(&all, ex, "table"); err != nil {
			t.Fatal(err)
		}
		all.WriteString("\n")
	}
	golden.Check(t, filepath.Join("testdata", "explain-pools.table"), all.Bytes())
	ex, err := in.ExplainPool(context.Background(), "ready")
	if err != nil {
		t.Fatal(err)
	}
	d := ex.Decisions[0]
	if d.Transition != "idle.start" || len(d.Facts) == 0 || d.Facts[0].Name != "state" || d.Facts[0].Value != "idle" {
		t.Errorf("ready's rotation decision %+v", d)
	}
}

// With more rotations in flight than the number in force — maxUnavailable
// lowered from 2 to 1 under the scripted pool "pair" — no start comes
// until fewer are in flight: the one slot is free once the later of the
// two ends (pair-a's, +23m), the next start a rotation and a cooldown
// (25m) after that.
func TestForecastAfterMaxUnavailableIsLowered(t *testing.T) {
	objs := scripted()
	for _, o := range objs {
		if p, ok := o.(*v1alpha1.RotationPolicy); ok && p.Name == "pair" {
			one := intstr.FromInt32(1)
			p.Spec.Surge.MaxUnavailable = &one
		}
	}
	st, err := inspector(t, objs...).Status(context.Background(), "pair")
	if err != nil {
		t.Fatal(err)
	}
	if f := st.Forecast; f == nil || len(f.Starts) != 2 || !f.Starts[0].Equal(now.Add(23*time.Minute)) || !f.Starts[1].Equal(now.Add(48*time.Minute)) {
		t.Fatalf("forecast %+v, want starts at +23m and +48m", f)
	}
}
