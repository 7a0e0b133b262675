package census

import (
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	_ "github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// now is a Monday noon in UTC.
var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// poolE is the pool's (and, unless a test says otherwise, each claim's)
// expireAfter: 14 days, under EKS Auto Mode's 21-day cap.
const poolE = 14 * 24 * time.Hour

// The figures of the always-open fixture, derived by hand
// (docs/design.md#age-threshold):
//
//	P      = 1m (a union open 24/7 has P = Tick)
//	t_rot  = readyTimeout 15m + tGP 30m + buffer 2m = 47m
//	Lead   = K·P + t_rot = 2·1m + 47m = 49m
//	A      = E − Lead = 336h − 49m
//
// so a claim is due once its deadline is less than 49m away, and the forceful
// fallback takes it once its deadline is less than 47m away.
const (
	tRot = 47 * time.Minute
	lead = 49 * time.Minute
)

var everyDay = []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

func alwaysOpen() v1alpha1.RotationPolicySpec {
	return v1alpha1.RotationPolicySpec{
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: everyDay, Start: "00:00", End: "24:00"}},
	}
}

func settings(t *testing.T, spec v1alpha1.RotationPolicySpec) policy.Settings {
	t.Helper()
	s, err := policy.Resolve(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pool() *karpv1.NodePool {
	e := poolE
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "general"}}
	np.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 30 * time.Minute}
	return np
}

// input is the always-open fixture with claims.
func input(t *testing.T, spec v1alpha1.RotationPolicySpec, claims ...karpv1.NodeClaim) Input {
	t.Helper()
	s := settings(t, spec)
	_, d := s.Derive(pool(), now)
	return Input{Now: now, Claims: claims, Settings: s, Derivation: d}
}

// claim is a Ready claim with the pool's expireAfter whose deadline is
// `left` away from now.
func claim(name string, left time.Duration, mods ...func(*karpv1.NodeClaim)) karpv1.NodeClaim {
	e := poolE
	c := karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name: name, Annotations: map[string]string{},
		CreationTimestamp: metav1.NewTime(now.Add(left - e)),
	}}
	c.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
	c.Status.Conditions = []status.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
	for _, m := range mods {
		m(&c)
	}
	return c
}

// expireAfter gives the claim its own expireAfter, keeping its deadline.
func expireAfter(e time.Duration) func(*karpv1.NodeClaim) {
	return func(c *karpv1.NodeClaim) {
		deadline := c.CreationTimestamp.Add(*c.Spec.ExpireAfter.Duration)
		c.Spec.ExpireAfter.Duration = &e
		c.CreationTimestamp = metav1.NewTime(deadline.Add(-e))
	}
}

func createdAt(t time.Time) func(*karpv1.NodeClaim) {
	return func(c *karpv1.NodeClaim) {
		e := c.CreationTimestamp.Add(*c.Spec.ExpireAfter.Duration).Sub(t)
		c.Spec.ExpireAfter.Duration = &e
		c.CreationTimestamp = metav1.NewTime(t)
	}
}

func annotate(kv ...string) func(*karpv1.NodeClaim) {
	return func(c *karpv1.NodeClaim) {
		for i := 0; i < len(kv); i += 2 {
			c.Annotations[kv[i]] = kv[i+1]
		}
	}
}

func state(s string) func(*karpv1.NodeClaim) { return annotate(v1alpha1.AnnotationState, s) }

func ready(s metav1.ConditionStatus) func(*karpv1.NodeClaim) {
	return func(c *karpv1.NodeClaim) { c.Status.Conditions = []status.Condition{{Type: "Ready", Status: s}} }
}

func stamp(t time.Time) string { return t.Format(time.RFC3339) }

// The fixture's figures are the ones the expectations below are derived from.
func TestFixtureFigures(t *testing.T) {
	in := input(t, alwaysOpen())
	d := in.Derivation
	if !d.Cycle.AlwaysOpen || d.Cycle.P != time.Minute || d.TRot != tRot || d.Lead != lead || d.A != poolE-lead || !d.Derived {
		t.Fatalf("derivation = P %s, t_rot %s, lead %s, A %s, derived %v", d.Cycle.P, d.TRot, d.Lead, d.A, d.Derived)
	}
}

// Every census class, each held by one claim that is otherwise an
// eligible candidate.
func TestTakeClassifiesEveryClaim(t *testing.T) {
	deleted := metav1.NewTime(now.Add(-time.Minute))
	claims := []karpv1.NodeClaim{
		claim("deleting", 20*time.Minute, func(c *karpv1.NodeClaim) { c.DeletionTimestamp = &deleted }),
		claim("expired", 20*time.Minute, state(v1alpha1.StateExpired)),
		claim("pending", 20*time.Minute, state(v1alpha1.StatePending)),
		claim("draining", 20*time.Minute, state(v1alpha1.StateDraining)),
		claim("never", 20*time.Minute, func(c *karpv1.NodeClaim) { c.Spec.ExpireAfter.Duration = nil }),
		claim("young", 50*time.Minute), // deadline 50m away: 1m before its trigger
		claim("unready", 20*time.Minute, ready(metav1.ConditionFalse)),
		claim("no-condition", 20*time.Minute, func(c *karpv1.NodeClaim) { c.Status.Conditions = nil }),
		claim("opted", 20*time.Minute),
		// failed 10m ago, first retry: backoff 30m ends in 20m
		claim("backing-off", 20*time.Minute, state(v1alpha1.StateFailed), annotate(v1alpha1.AnnotationFailedAt, stamp(now.Add(-10*time.Minute)), v1alpha1.AnnotationRetryCount, "1")),
		// failed 40m ago, first retry: backoff ended 10m ago
		claim("retry", 20*time.Minute, state(v1alpha1.StateFailed), annotate(v1alpha1.AnnotationFailedAt, stamp(now.Add(-40*time.Minute)), v1alpha1.AnnotationRetryCount, "1")),
		claim("weird", 20*time.Minute, state("paused")),
		claim("plain", 30*time.Minute),
	}
	in := input(t, alwaysOpen(), claims...)
	var asked []string
	in.OptedOut = func(c *karpv1.NodeClaim) bool {
		asked = append(asked, c.Name)
		return c.Name == "opted"
	}
	r := Take(in)
	want := Census{Total: 13, Candidates: 2, InBackoff: 1, InFlight: 2, NotDue: 1, OptedOut: 1, NotReady: 2, Deleting: 1, Expired: 1, NoDeadline: 1, MaxRetry: 1}
	if r.Census != want {
		t.Errorf("census\n got %+v\nwant %+v", r.Census, want)
	}
	wantBad := []BadAnnotation{{Object: "NodeClaim/weird", Key: v1alpha1.AnnotationState, Value: "paused", Problem: "not a known state"}}
	if !reflect.DeepEqual(r.Bad, wantBad) {
		t.Errorf("bad = %+v", r.Bad)
	}
	// Only claims that are due, ready and not yet classified are asked about.
	sort.Strings(asked)
	if want := []string{"backing-off", "opted", "plain", "retry", "weird"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("OptedOut asked for %v, want %v", asked, want)
	}
	// "retry" (deadline 20m) beats "plain" (30m).
	if r.Candidate == nil || r.Candidate.Claim.Name != "retry" {
		t.Fatalf("candidate = %+v", r.Candidate)
	}
	if len(r.Figures) != 13 {
		t.Errorf("%d figures, want one per well-formed claim", len(r.Figures))
	}
	if got := r.Figures["backing-off"].RetryAt; !got.Equal(now.Add(20 * time.Minute)) {
		t.Errorf("backing-off retryAt = %s", got)
	}
	if f := r.Figures["never"]; !f.Deadline.IsZero() || !f.Trigger.IsZero() || f.Due(now) {
		t.Errorf("an expireAfter Never claim has figures %+v", f)
	}
	if f := r.Figures["young"]; !f.Trigger.Equal(now.Add(time.Minute)) || !f.Deadline.Equal(now.Add(50*time.Minute)) || f.Due(now) || !f.Due(now.Add(61*time.Second)) {
		t.Errorf("young figures %+v", f)
	}
}

// The classes are checked in order: the first that holds counts the claim.
func TestTakeClassPrecedence(t *testing.T) {
	deleted := metav1.NewTime(now)
	cases := []struct {
		name  string
		claim karpv1.NodeClaim
		want  Census
	}{
		{"deleting beats in flight", claim("c", 20*time.Minute, state(v1alpha1.StatePending), func(c *karpv1.NodeClaim) { c.DeletionTimestamp = &deleted }), Census{Deleting: 1}},
		{"a draining claim's delete is the rotation's own", claim("c", 20*time.Minute, state(v1alpha1.StateDraining), func(c *karpv1.NodeClaim) { c.DeletionTimestamp = &deleted }), Census{InFlight: 1}},
		{"expired beats not due", claim("c", 3*time.Hour, state(v1alpha1.StateExpired)), Census{Expired: 1}},
		{"in flight beats not ready", claim("c", 20*time.Minute, state(v1alpha1.StateDraining), ready(metav1.ConditionFalse)), Census{InFlight: 1}},
		{"not due beats not ready", claim("c", 3*time.Hour, ready(metav1.ConditionUnknown)), Census{NotDue: 1}},
		{"not ready beats opted out", claim("c", 20*time.Minute, ready(metav1.ConditionFalse)), Census{NotReady: 1}},
		{"opted out beats in backoff", claim("c", 20*time.Minute, state(v1alpha1.StateFailed), annotate(v1alpha1.AnnotationFailedAt, stamp(now))), Census{OptedOut: 1}},
		{"an unknown state not yet due is just not due", claim("c", 3*time.Hour, state("paused")), Census{NotDue: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := input(t, alwaysOpen(), c.claim)
			in.OptedOut = func(*karpv1.NodeClaim) bool { return true }
			r := Take(in)
			c.want.Total = 1
			if r.Census != c.want || r.Candidate != nil || len(r.Bad) != 0 {
				t.Errorf("census %+v candidate %v bad %v, want %+v", r.Census, r.Candidate, r.Bad, c.want)
			}
		})
	}
}

func names(r Result) string {
	if r.Candidate == nil {
		return "<none>"
	}
	return r.Candidate.Claim.Name
}

// Short-lead claims first, then the earliest deadline, the oldest, the name.
func TestTakeCandidateOrder(t *testing.T) {
	// short: its own expireAfter 45m ≤ Lead 49m; deadline 35m away.
	short := claim("short", 35*time.Minute, expireAfter(45*time.Minute))
	early := claim("early", 20*time.Minute)
	// same deadline as early, created an hour earlier (longer expireAfter).
	older := claim("older", 20*time.Minute, createdAt(early.CreationTimestamp.Add(-time.Hour)))
	twin := claim("a-twin", 20*time.Minute)
	late := claim("late", 40*time.Minute)
	cases := []struct {
		claims []karpv1.NodeClaim
		want   string
	}{
		{[]karpv1.NodeClaim{late, early, older, twin, short}, "short"},
		{[]karpv1.NodeClaim{late, early, older, twin}, "older"},
		{[]karpv1.NodeClaim{late, early, twin}, "a-twin"},
		{[]karpv1.NodeClaim{late, early}, "early"},
		{[]karpv1.NodeClaim{late}, "late"},
	}
	for _, c := range cases {
		r := Take(input(t, alwaysOpen(), c.claims...))
		if got := names(r); got != c.want {
			t.Errorf("among %d claims: candidate %s, want %s", len(c.claims), got, c.want)
		}
	}
	r := Take(input(t, alwaysOpen(), late, short, early))
	if r.Census.ShortLead != 1 || !r.Figures["short"].ShortLead || r.Figures["early"].ShortLead {
		t.Errorf("short lead: census %d, figures %+v", r.Census.ShortLead, r.Figures)
	}
	c := r.Candidate
	if c.Kind != "surge" || !c.Deadline.Equal(now.Add(35*time.Minute)) || c.Age != 10*time.Minute {
		t.Errorf("candidate = kind %s deadline %s age %s", c.Kind, c.Deadline, c.Age)
	}
}

// The forceful fallback takes a candidate whose deadline is nearer than
// t_rot (47m), only when the policy enables it.
func TestTakeForcefulFallback(t *testing.T) {
	spec := alwaysOpen()
	spec.Surge.ForcefulFallback.Enabled = true
	cases := []struct {
		left time.Duration
		spec v1alpha1.RotationPolicySpec
		want string
	}{
		{20 * time.Minute, spec, "forcefulFallback"},
		{46 * time.Minute, spec, "forcefulFallback"},
		{47 * time.Minute, spec, "surge"}, // exactly t_rot away: a surge may still finish
		{48 * time.Minute, spec, "surge"},
		{20 * time.Minute, alwaysOpen(), "surge"}, // not enabled
	}
	for _, c := range cases {
		r := Take(input(t, c.spec, claim("c", c.left)))
		if r.Candidate == nil || r.Candidate.Kind != c.want {
			t.Errorf("deadline in %s, fallback %v: candidate %+v, want %s", c.left, c.spec.Surge.ForcefulFallback.Enabled, r.Candidate, c.want)
		}
	}
}

// An override age threshold triggers at creation + A, not deadline − lead.
func TestTakeOverrideThreshold(t *testing.T) {
	spec := alwaysOpen()
	spec.AgeThreshold = "240h"
	young := claim("young", 97*time.Hour) // age 239h
	old := claim("old", 95*time.Hour)     // age 241h
	r := Take(input(t, spec, young, old))
	if got := r.Figures["young"].Trigger; !got.Equal(young.CreationTimestamp.Add(240 * time.Hour)) {
		t.Errorf("trigger %s, want creation + 240h", got)
	}
	if r.Census.NotDue != 1 || r.Census.Candidates != 1 || names(r) != "old" {
		t.Errorf("census %+v candidate %s", r.Census, names(r))
	}
}

// Without an occurrence no claim has a deadline: none is ever due by age.
func TestTakeWithoutWindowsHasNoDeadlines(t *testing.T) {
	r := Take(input(t, v1alpha1.RotationPolicySpec{}, claim("c", 20*time.Minute)))
	if r.Census.NoDeadline != 1 || r.Candidate != nil || r.Census.ShortLead != 0 {
		t.Errorf("census %+v candidate %v", r.Census, r.Candidate)
	}
}

// A malformed failure record keeps the claim out of the census and names
// the claim and the key; it never becomes a retry.
func TestTakeMalformedBackoff(t *testing.T) {
	claims := []karpv1.NodeClaim{
		claim("bad-time", 20*time.Minute, state(v1alpha1.StateFailed), annotate(v1alpha1.AnnotationFailedAt, "yesterday", v1alpha1.AnnotationRetryCount, "7")),
		claim("bad-count", 20*time.Minute, state(v1alpha1.StateFailed), annotate(v1alpha1.AnnotationFailedAt, stamp(now.Add(-time.Hour)), v1alpha1.AnnotationRetryCount, "-1")),
		claim("bad-word", 20*time.Minute, state(v1alpha1.StateFailed), annotate(v1alpha1.AnnotationFailedAt, stamp(now.Add(-time.Hour)), v1alpha1.AnnotationRetryCount, "two")),
		claim("ok", 30*time.Minute, annotate(v1alpha1.AnnotationRetryCount, "3")),
	}
	r := Take(input(t, alwaysOpen(), claims...))
	want := []BadAnnotation{
		{Object: "NodeClaim/bad-time", Key: v1alpha1.AnnotationFailedAt, Value: "yesterday", Problem: "not an RFC3339 time"},
		{Object: "NodeClaim/bad-count", Key: v1alpha1.AnnotationRetryCount, Value: "-1", Problem: "not a non-negative integer"},
		{Object: "NodeClaim/bad-word", Key: v1alpha1.AnnotationRetryCount, Value: "two", Problem: "not a non-negative integer"},
	}
	if !reflect.DeepEqual(r.Bad, want) {
		t.Errorf("bad\n got %+v\nwant %+v", r.Bad, want)
	}
	if r.Census != (Census{Total: 4, Candidates: 1, MaxRetry: 3}) {
		t.Errorf("census %+v: malformed claims must be left out (and their retry-count with them)", r.Census)
	}
	if names(r) != "ok" {
		t.Errorf("candidate %s", names(r))
	}
	for _, n := range []string{"bad-time", "bad-count", "bad-word"} {
		if _, ok := r.Figures[n]; ok {
			t.Errorf("%s has figures", n)
		}
	}
	if r.Population.Nodes != 4 || r.Population.Burst != 1 {
		t.Errorf("population %+v", r.Population)
	}
}

// MaxRetry is the highest retry-count of the classified claims.
func TestTakeMaxRetry(t *testing.T) {
	r := Take(input(t, alwaysOpen(),
		claim("a", 3*time.Hour, annotate(v1alpha1.AnnotationRetryCount, "2")),
		claim("b", 20*time.Minute, state(v1alpha1.StateFailed), annotate(v1alpha1.AnnotationFailedAt, stamp(now), v1alpha1.AnnotationRetryCount, "5")),
		claim("c", 20*time.Minute, state(v1alpha1.StatePending), annotate(v1alpha1.AnnotationRetryCount, "4")),
	))
	if r.Census.MaxRetry != 5 || r.Census.InBackoff != 1 {
		t.Errorf("census %+v", r.Census)
	}
}

// Burst is the largest number of deadlines within one period P (1m) of
// each other; claims without a deadline do not count.
func TestTakeBurst(t *testing.T) {
	r := Take(input(t, alwaysOpen(),
		claim("a", 10*time.Minute),
		claim("b", 10*time.Minute+30*time.Second),
		claim("c", 11*time.Minute),             // exactly P after a: same burst
		claim("d", 11*time.Minute+time.Second), // more than P after a
		claim("e", 30*time.Hour),
		claim("f", 10*time.Minute, func(c *karpv1.NodeClaim) { c.Spec.ExpireAfter.Duration = nil }),
	))
	if r.Population != (schedule.Population{Nodes: 6, Burst: 3}) {
		t.Errorf("population %+v, want 6 nodes, burst 3", r.Population)
	}
	if got := Take(input(t, alwaysOpen())); got.Population != (schedule.Population{}) || got.Candidate != nil || got.Census.Total != 0 {
		t.Errorf("empty pool: %+v", got)
	}
}

// The base of a percentage leaves out the surge claims of the rotations
// in flight (their deadlines too) and keeps every other claim, an old
// one being deleted among them; PopulationOf, the policy status's,
// agrees with Take (issue #53).
func TestTakePopulationLeavesOutSurgeClaims(t *testing.T) {
	deleting := claim("c", 10*time.Minute+20*time.Second, func(c *karpv1.NodeClaim) { c.DeletionTimestamp = &metav1.Time{Time: now} })
	claims := []karpv1.NodeClaim{
		claim("a", 10*time.Minute), claim("b", 10*time.Minute+10*time.Second), deleting,
		claim("s1", 10*time.Minute+30*time.Second), claim("s2", 10*time.Minute+40*time.Second),
	}
	in := input(t, alwaysOpen(), claims...)
	if r := Take(in); r.Population != (schedule.Population{Nodes: 5, Burst: 5}) {
		t.Fatalf("without surge claims: population %+v, want 5 nodes, burst 5", r.Population)
	}
	in.Surge = map[string]bool{"s1": true, "s2": true, "not-in-the-pool": true}
	r := Take(in)
	if want := (schedule.Population{Nodes: 3, Burst: 3}); r.Population != want {
		t.Errorf("population %+v, want %+v", r.Population, want)
	}
	if got := PopulationOf(claims, in.Surge, in.Derivation); got != r.Population {
		t.Errorf("PopulationOf %+v, Take %+v", got, r.Population)
	}
	if _, ok := r.Figures["s1"]; !ok || r.Census.Total != 5 {
		t.Errorf("a surge claim is still classified: figures %v, total %d", r.Figures, r.Census.Total)
	}
}

// Instants are every claim's trigger and backoff end.
func TestInstants(t *testing.T) {
	r := Take(input(t, alwaysOpen(),
		claim("young", 3*time.Hour),
		claim("failed", 20*time.Minute, state(v1alpha1.StateFailed), annotate(v1alpha1.AnnotationFailedAt, stamp(now.Add(-10*time.Minute)), v1alpha1.AnnotationRetryCount, "2")),
	))
	got := map[string]int{}
	for _, t := range r.Instants() {
		got[stamp(t)]++
	}
	want := map[string]int{
		stamp(now.Add(3*time.Hour - lead)):    1, // young's trigger
		stamp(now.Add(20*time.Minute - lead)): 1, // failed's trigger
		stamp(now.Add(50 * time.Minute)):      1, // failed's retryAt: 10m ago + 2·30m
		stamp(time.Time{}):                    1, // young has no backoff
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("instants %v\nwant %v", got, want)
	}
}

func TestParseBackoff(t *testing.T) {
	at := now.Add(-time.Hour)
	cases := []struct {
		failedAt, retry string
		want            Backoff
		bad             *BadAnnotation
	}{
		{stamp(at), "", Backoff{FailedAt: at, RetryCount: 1}, nil},
		{stamp(at), "3", Backoff{FailedAt: at, RetryCount: 3}, nil},
		{stamp(at), "0", Backoff{FailedAt: at, RetryCount: 0}, nil},
		{"", "", Backoff{}, &BadAnnotation{Key: v1alpha1.AnnotationFailedAt, Value: "", Problem: "not an RFC3339 time"}},
		{"2026-11-30 11:00", "2", Backoff{}, &BadAnnotation{Key: v1alpha1.AnnotationFailedAt, Value: "2026-11-30 11:00", Problem: "not an RFC3339 time"}},
		{stamp(at), "-1", Backoff{}, &BadAnnotation{Key: v1alpha1.AnnotationRetryCount, Value: "-1", Problem: "not a non-negative integer"}},
		{stamp(at), "1.5", Backoff{}, &BadAnnotation{Key: v1alpha1.AnnotationRetryCount, Value: "1.5", Problem: "not a non-negative integer"}},
	}
	for _, c := range cases {
		got, bad := ParseBackoff(c.failedAt, c.retry)
		if !got.FailedAt.Equal(c.want.FailedAt) || got.RetryCount != c.want.RetryCount || !reflect.DeepEqual(bad, c.bad) {
			t.Errorf("ParseBackoff(%q, %q) = %+v, %+v; want %+v, %+v", c.failedAt, c.retry, got, bad, c.want, c.bad)
		}
	}
}

// RetryAt is failed-at + retryBackoff·2^(n−1), capped at 8×, and clamped
// to the window the failure happened in.
func TestRetryAt(t *testing.T) {
	noWindows := settings(t, v1alpha1.RotationPolicySpec{}) // retryBackoff 30m
	at := now
	for n, want := range map[int]time.Duration{0: 30 * time.Minute, 1: 30 * time.Minute, 2: time.Hour, 3: 2 * time.Hour, 4: 4 * time.Hour, 5: 4 * time.Hour, 12: 4 * time.Hour} {
		if got := (Backoff{FailedAt: at, RetryCount: n}).RetryAt(noWindows); !got.Equal(at.Add(want)) {
			t.Errorf("retry %d outside any window: %s, want failed-at + %s", n, got.Sub(at), want)
		}
	}
	// One window, Monday 00:00–01:00 UTC (now's Monday).
	monday := settings(t, v1alpha1.RotationPolicySpec{MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon"}, Start: "00:00", End: "01:00"}}})
	midnight := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		failedAt time.Duration // after midnight
		retry    int
		want     time.Duration // after midnight
	}{
		{10 * time.Minute, 1, 40 * time.Minute},  // 30m fits
		{10 * time.Minute, 3, 40 * time.Minute},  // 2h would outlast the window: steps down to 30m
		{45 * time.Minute, 1, 75 * time.Minute},  // not even 30m fits: carries over
		{45 * time.Minute, 2, 105 * time.Minute}, // carries over with the escalated 1h
	}
	for _, c := range cases {
		got := (Backoff{FailedAt: midnight.Add(c.failedAt), RetryCount: c.retry}).RetryAt(monday)
		if !got.Equal(midnight.Add(c.want)) {
			t.Errorf("failed at 00:%02.0f, retry %d: retryAt %s, want %s", c.failedAt.Minutes(), c.retry, got.Format("15:04"), midnight.Add(c.want).Format("15:04"))
		}
	}
}

func TestClaimRetryAt(t *testing.T) {
	s := settings(t, v1alpha1.RotationPolicySpec{})
	c := claim("f", time.Hour, annotate(v1alpha1.AnnotationFailedAt, stamp(now)))
	if got, bad := ClaimRetryAt(&c, s); bad != nil || !got.Equal(now.Add(30*time.Minute)) {
		t.Errorf("retry-count absent: %s %v, want failed-at + 30m (retry 1)", got, bad)
	}
	c.Annotations[v1alpha1.AnnotationRetryCount] = "x"
	got, bad := ClaimRetryAt(&c, s)
	want := &BadAnnotation{Object: "NodeClaim/f", Key: v1alpha1.AnnotationRetryCount, Value: "x", Problem: "not a non-negative integer"}
	if !got.IsZero() || !reflect.DeepEqual(bad, want) {
		t.Errorf("ClaimRetryAt = %s, %+v", got, bad)
	}
}

func TestRetryDue(t *testing.T) {
	retryAt := now.Add(time.Minute)
	cases := []struct {
		name     string
		claim    engine.ClaimObservation
		now      time.Time
		want     any
		errorMsg string
	}{
		{"no failure recorded", engine.ClaimObservation{RetryAt: retryAt}, now, true, ""},
		{"malformed failed-at", engine.ClaimObservation{FailedAt: "x", BackoffError: `noderotation.io/failed-at "x" is not an RFC3339 time`}, now, nil, `noderotation.io/failed-at "x" is not an RFC3339 time`},
		{"malformed retry-count", engine.ClaimObservation{FailedAt: stamp(now), RetryCount: "-1", BackoffError: `noderotation.io/retry-count "-1" is not a non-negative integer`}, now.Add(time.Hour), nil, `noderotation.io/retry-count "-1" is not a non-negative integer`},
		{"malformed retry-count, no failed-at", engine.ClaimObservation{RetryCount: "-1", BackoffError: `noderotation.io/retry-count "-1" is not a non-negative integer`}, now, true, ""},
		{"before retryAt", engine.ClaimObservation{FailedAt: stamp(now), RetryCount: "2", RetryAt: retryAt}, retryAt.Add(-time.Second), false, ""},
		{"at retryAt", engine.ClaimObservation{FailedAt: stamp(now), RetryCount: "2", RetryAt: retryAt}, retryAt, true, ""},
		{"after retryAt", engine.ClaimObservation{FailedAt: stamp(now), RetryAt: retryAt}, retryAt.Add(time.Second), true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := RetryDue(&engine.Snapshot{Now: c.now, Claim: c.claim})
			switch {
			case c.errorMsg != "":
				if err == nil || err.Error() != c.errorMsg {
					t.Errorf("error %v, want %q", err, c.errorMsg)
				}
			case err != nil:
				t.Errorf("error %v", err)
			}
			if got != c.want {
				t.Errorf("RetryDue = %v, want %v", got, c.want)
			}
		})
	}
}

func TestNoCandidateReason(t *testing.T) {
	cases := []struct {
		c    Census
		want string
	}{
		{Census{}, "the NodePool has no NodeClaims"},
		{Census{Total: 3, InBackoff: 1, NotDue: 2}, "every due claim is inside its retryBackoff"},
		{Census{Total: 3, NotDue: 2, NoDeadline: 1}, "no claim is past its age threshold"},
		{Census{Total: 3, NotDue: 2, NotReady: 1}, "no claim is eligible"},
		{Census{Total: 1, OptedOut: 1}, "no claim is eligible"},
	}
	for _, c := range cases {
		if got := c.c.NoCandidateReason(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.c, got, c.want)
		}
	}
}

func TestOutstanding(t *testing.T) {
	if got := (Census{Total: 9, Candidates: 2, InBackoff: 3, NotDue: 4}).Outstanding(); got != 5 {
		t.Errorf("outstanding = %d, want candidates + in backoff = 5", got)
	}
}

// BadAnnotation's text is what the Warnings say.
func TestBadAnnotationError(t *testing.T) {
	b := BadAnnotation{Object: "NodeClaim/x", Key: "k", Value: `a "b"`, Problem: "odd"}
	if got := b.Error(); got != `k "a \"b\"" is odd` || strings.Contains(got, "NodeClaim/x") {
		t.Errorf("Error() = %s", got)
	}
}

// The census and the table agree on a failed claim with no failed-at (what
// an older startup sweep wrote): no failure time recorded, nothing to wait
// for — a candidate again, never skipped forever as malformed.
func TestTakeFailedWithoutFailedAtIsDue(t *testing.T) {
	c := claim("swept", 20*time.Minute, state(v1alpha1.StateFailed))
	r := Take(input(t, alwaysOpen(), c))
	if len(r.Bad) != 0 || r.Census.Candidates != 1 || names(r) != "swept" {
		t.Errorf("bad %+v census %+v candidate %s: want the claim a candidate", r.Bad, r.Census, names(r))
	}
	due, err := RetryDue(&engine.Snapshot{Now: now, Claim: engine.ClaimObservation{Exists: true, State: v1alpha1.StateFailed}})
	if err != nil || due != true {
		t.Errorf("RetryDue = %v, %v: the table must agree", due, err)
	}
}

// A claim a slot names is never another slot's candidate, even before its
// state is written; it stays counted in its class
// (docs/design.md#throughput).
func TestTakeSkipsAnchoredClaims(t *testing.T) {
	early, late := claim("early", 20*time.Minute), claim("late", 40*time.Minute)
	in := input(t, alwaysOpen(), early, late)
	in.Anchored = map[string]bool{"early": true}
	r := Take(in)
	if got := names(r); got != "late" {
		t.Errorf("candidate %s, want late: early is anchored", got)
	}
	if r.Census.Candidates != 2 {
		t.Errorf("candidates counted %d, want 2: the census classes are unchanged", r.Census.Candidates)
	}
	in.Anchored["late"] = true
	if r := Take(in); r.Candidate != nil {
		t.Errorf("candidate %s with every eligible claim anchored", names(r))
	}
}
