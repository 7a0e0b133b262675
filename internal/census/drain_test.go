package census

import (
	"slices"
	"strings"
	"testing"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// nightly opens 02:00–06:00 UTC every day: P = 1d, so a claim is due two
// days and t_rot before its deadline and most due claims are far from it.
func nightly() v1alpha1.RotationPolicySpec {
	return v1alpha1.RotationPolicySpec{
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: everyDay, Start: "02:00", End: "06:00"}},
	}
}

// blockedBy answers DrainBlockers from a map of claim names to Pods, and
// counts the questions.
type blockedBy struct {
	pods  map[string][]string
	asked []string
}

func (b *blockedBy) fn(c *karpv1.NodeClaim) []Blocker {
	b.asked = append(b.asked, c.Name)
	var out []Blocker
	for _, p := range b.pods[c.Name] {
		out = append(out, Blocker{Pod: p, Reason: BlockedDoNotDisrupt})
	}
	return out
}

// urgency is how long before its deadline a blocked claim is taken anyway:
// one more rotation ahead of it and its own worst case.
func urgency(in Input) time.Duration {
	return in.Derivation.TRot + in.Derivation.TRotEst + in.Settings.CooldownAfter
}

func TestDrainBlockedClaimIsPassedOver(t *testing.T) {
	b := &blockedBy{pods: map[string][]string{"early": {"apps/job"}}}
	in := input(t, nightly(), claim("early", 5*time.Hour), claim("late", 10*time.Hour))
	in.DrainBlockers = b.fn
	r := Take(in)
	if r.Candidate == nil || r.Candidate.Claim.Name != "late" || len(r.Candidate.Blockers) != 0 {
		t.Fatalf("candidate %+v, want late: the earlier deadline's node blocks its drain", r.Candidate)
	}
	got, ok := r.Blocked["early"]
	if !ok || got.Blockers[0].Pod != "apps/job" || !got.UrgentFrom.Equal(now.Add(5*time.Hour-urgency(in))) {
		t.Fatalf("blocked %+v, want early with apps/job, urgent from deadline − %s", r.Blocked, urgency(in))
	}
	if c := r.Census; c.Candidates != 2 || c.DrainBlocked != 1 || c.Outstanding() != 1 {
		t.Errorf("census %+v: both eligible, one passed over, one outstanding (the deferred one is not missed)", c)
	}
	if !slices.ContainsFunc(r.Instants(), got.UrgentFrom.Equal) {
		t.Error("the instant the blocked claim becomes urgent is not among the census instants: the pool would not wake for it")
	}
}

func TestDrainBlockedClaimIsTakenWhenItsDeadlineLeavesNoOtherChoice(t *testing.T) {
	b := &blockedBy{pods: map[string][]string{"early": {"apps/job", "apps/db"}}}
	in := input(t, nightly())
	in.Claims = []karpv1.NodeClaim{claim("early", urgency(in)-time.Minute), claim("late", 10*time.Hour)}
	in.DrainBlockers = b.fn
	r := Take(in)
	if r.Candidate == nil || r.Candidate.Claim.Name != "early" || len(r.Candidate.Blockers) != 2 {
		t.Fatalf("candidate %+v, want early with its two blockers: its deadline leaves no other choice", r.Candidate)
	}
	if len(r.Blocked) != 0 || r.Census.DrainBlocked != 0 {
		t.Errorf("blocked %v: the urgent claim was taken, not passed over", r.Blocked)
	}
}

func TestEveryCandidateBlockedLeavesNone(t *testing.T) {
	b := &blockedBy{pods: map[string][]string{"a": {"apps/x"}, "b": {"apps/y"}}}
	in := input(t, nightly(), claim("a", 5*time.Hour), claim("b", 6*time.Hour))
	in.DrainBlockers = b.fn
	r := Take(in)
	if r.Candidate != nil || len(r.Blocked) != 2 {
		t.Fatalf("candidate %+v, blocked %v: both are blocked and neither is urgent", r.Candidate, r.Blocked)
	}
	if reason := r.Census.NoCandidateReason(); !strings.Contains(reason, "block the drain") {
		t.Errorf("no-candidate reason %q does not say why", reason)
	}
}

// The blockers are asked in the candidate order and only until a claim is
// taken: each question may be a request to the API server.
func TestDrainBlockersAreAskedLazily(t *testing.T) {
	b := &blockedBy{pods: map[string][]string{"b": {"apps/y"}}}
	in := input(t, nightly(), claim("c", 7*time.Hour), claim("a", 5*time.Hour), claim("b", 6*time.Hour))
	in.DrainBlockers = b.fn
	if r := Take(in); r.Candidate == nil || r.Candidate.Claim.Name != "a" {
		t.Fatalf("candidate %+v, want a", r.Candidate)
	}
	if !slices.Equal(b.asked, []string{"a"}) {
		t.Errorf("asked about %v, want only the first in line", b.asked)
	}
}

func TestBlockedByReasonCountsClaims(t *testing.T) {
	r := Result{Blocked: map[string]Blocked{
		"a": {Blockers: []Blocker{{Pod: "x/1", Reason: BlockedDoNotDisrupt}, {Pod: "x/2", Reason: BlockedDoNotDisrupt}, {Pod: "x/3", Reason: BlockedPDB}}},
		"b": {Blockers: []Blocker{{Pod: "y/1", Reason: BlockedPDB}}},
	}}
	if got := r.BlockedByReason(); got[BlockedDoNotDisrupt] != 1 || got[BlockedPDB] != 2 || len(got) != 2 {
		t.Errorf("by reason %v: want a claim counted once per reason among its Pods", got)
	}
}

// Windows decide urgency too: a blocked claim is taken in the last window
// occurrence that can still start it (opening by deadline − t_rot), not
// left to a deadline that falls while the window is closed.
func TestDrainBlockedClaimIsTakenInItsLastUsableWindow(t *testing.T) {
	tuesday3am := now.Add(15 * time.Hour) // inside Tuesday's 02:00–06:00
	b := &blockedBy{pods: map[string][]string{"today": {"apps/job"}, "tomorrow": {"apps/job2"}}}
	in := input(t, nightly(),
		claim("today", 26*time.Hour),    // Tue 14:00: today's window is its last
		claim("tomorrow", 50*time.Hour), // Wed 14:00: tomorrow's window can take it
		claim("free", 60*time.Hour))
	in.Now, in.DrainBlockers = tuesday3am, b.fn
	r := Take(in)
	if r.Candidate == nil || r.Candidate.Claim.Name != "today" || len(r.Candidate.Blockers) != 1 {
		t.Fatalf("candidate %+v, want today: its deadline falls before tomorrow's window", r.Candidate)
	}
	in.Claims = in.Claims[1:]
	b.asked = nil
	r = Take(in)
	wed2am := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)
	if r.Candidate == nil || r.Candidate.Claim.Name != "free" || !r.Blocked["tomorrow"].UrgentFrom.Equal(wed2am) {
		t.Fatalf("candidate %+v, blocked %+v: want free, with tomorrow urgent from its last usable window at %s", r.Candidate, r.Blocked, wed2am)
	}
}

// With no terminationGracePeriod Karpenter never deletes a do-not-disrupt
// Pod, so the drain would never end: a blocked claim is never taken, even
// at its deadline; Karpenter's expiry takes it.
func TestDrainBlockedClaimIsNeverTakenWithoutATerminationGracePeriod(t *testing.T) {
	b := &blockedBy{pods: map[string][]string{"early": {"apps/job"}}}
	in := input(t, nightly(), claim("early", time.Minute))
	in.Derivation.TGPUnset = true
	in.DrainBlockers = b.fn
	r := Take(in)
	if r.Candidate != nil || !r.Blocked["early"].UrgentFrom.IsZero() {
		t.Fatalf("candidate %+v, blocked %+v: never taken, never urgent", r.Candidate, r.Blocked)
	}
	if n := len(r.Instants()); n != 2*len(r.Figures) {
		t.Errorf("%d census instants, want only each claim's trigger and backoff end: no urgency to wake for", n)
	}
}

// Blackouts count as closed windows: with Wednesday's window blacked out,
// a blocked claim due Wednesday 14:00 is urgent in Tuesday's window; open
// around the clock, a blackout over deadline − t_rot makes it urgent one
// rotation ahead of the blackout's start.
func TestDrainBlockedUrgencyCountsBlackouts(t *testing.T) {
	tuesday3am := now.Add(15 * time.Hour)
	b := &blockedBy{pods: map[string][]string{"tomorrow": {"apps/job"}}}
	spec := nightly()
	wed := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	spec.Blackouts = []v1alpha1.Blackout{{Start: wed.Format(time.RFC3339), End: wed.Add(12 * time.Hour).Format(time.RFC3339)}}
	in := input(t, spec, claim("tomorrow", 50*time.Hour), claim("free", 60*time.Hour))
	in.Now, in.DrainBlockers = tuesday3am, b.fn
	if r := Take(in); r.Candidate == nil || r.Candidate.Claim.Name != "tomorrow" {
		t.Fatalf("candidate %+v, blocked %+v: want tomorrow, its last usable window is today's", r.Candidate, r.Blocked)
	}

	spec = alwaysOpen()
	in = input(t, spec)
	latest := now.Add(10 * time.Hour).Add(-in.Derivation.TRot)
	start := latest.Add(-time.Hour)
	spec.Blackouts = []v1alpha1.Blackout{{Start: start.Format(time.RFC3339), End: latest.Add(time.Hour).Format(time.RFC3339)}}
	// rotate-next makes it eligible hours before its age threshold
	in = input(t, spec, claim("late", 10*time.Hour, annotate(v1alpha1.AnnotationRotateNext, "true")))
	in.DrainBlockers = (&blockedBy{pods: map[string][]string{"late": {"apps/job"}}}).fn
	r := Take(in)
	want := start.Add(-(in.Derivation.TRotEst + in.Settings.CooldownAfter))
	if got := r.Blocked["late"].UrgentFrom; !got.Equal(want) {
		t.Errorf("urgent from %s, want %s: one rotation ahead of the blackout over its last start", got, want)
	}
}
