package census

import (
	"strings"
	"testing"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// rotate-next makes a claim not yet due the candidate, ahead of a due one
// with an earlier deadline (docs/design.md#manual-controls).
func TestRotateNextGoesFirst(t *testing.T) {
	r := Take(input(t, alwaysOpen(),
		claim("due", 20*time.Minute),
		claim("young", 10*24*time.Hour, annotate(v1alpha1.AnnotationRotateNext, "true")),
		claim("declined", 9*24*time.Hour, annotate(v1alpha1.AnnotationRotateNext, "false")),
	))
	if r.Candidate == nil || r.Candidate.Claim.Name != "young" {
		t.Fatalf("candidate %+v, want young", r.Candidate)
	}
	if r.Census.Candidates != 2 || r.Census.NotDue != 1 || len(r.Bad) != 0 {
		t.Errorf("census %+v, bad %v", r.Census, r.Bad)
	}
}

// A claim that never expires is rotated on request too.
func TestRotateNextWithoutADeadline(t *testing.T) {
	never := claim("never", 0, annotate(v1alpha1.AnnotationRotateNext, "true"))
	never.Spec.ExpireAfter = karpv1.NillableDuration{}
	if r := Take(input(t, alwaysOpen(), never)); r.Candidate == nil || r.Census.NoDeadline != 0 {
		t.Errorf("candidate %+v, census %+v", r.Candidate, r.Census)
	}
}

// skip-until keeps a due claim out until then; the instant wakes the pool;
// one that reaches past the deadline is flagged.
func TestSkipUntil(t *testing.T) {
	until := now.Add(2 * time.Hour)
	in := input(t, alwaysOpen(),
		claim("skipped", 20*time.Minute, annotate(v1alpha1.AnnotationSkipUntil, until.Format(time.RFC3339))),
		claim("over", 30*time.Minute, annotate(v1alpha1.AnnotationSkipUntil, now.Add(-time.Minute).Format(time.RFC3339))),
	)
	r := Take(in)
	if r.Candidate == nil || r.Candidate.Claim.Name != "over" || r.Census.Skipped != 1 || r.Census.Candidates != 1 {
		t.Fatalf("candidate %+v, census %+v", r.Candidate, r.Census)
	}
	if got := Class(in, r.Figures["skipped"]); got != ClassSkipped {
		t.Errorf("class %s", got)
	}
	found := false
	for _, i := range r.Instants() {
		found = found || i.Equal(until)
	}
	if !found {
		t.Error("the skip's end is no instant")
	}
	if !r.Figures["skipped"].SkipsPastLastStart(now) || r.Figures["over"].SkipsPastLastStart(now) {
		t.Error("SkipsPastLastStart: the 2h skip passes the 20m deadline, the past one does not")
	}
	if len(r.SkipHeld) != 1 || r.SkipHeld[0].Claim.Name != "skipped" {
		t.Errorf("skip-held %+v, want the due claim skipped", r.SkipHeld)
	}
	if r.Census.Outstanding() != 1 {
		t.Errorf("outstanding %d: a skipped claim is declined, not missed", r.Census.Outstanding())
	}
}

// A malformed request is reported and ignored: the claim counts as it
// would without it.
func TestMalformedRequestsAreIgnored(t *testing.T) {
	r := Take(input(t, alwaysOpen(),
		claim("a", 20*time.Minute, annotate(v1alpha1.AnnotationRotateNext, "yes", v1alpha1.AnnotationSkipUntil, "after lunch")),
		claim("b", 10*24*time.Hour, annotate(v1alpha1.AnnotationRotateNext, "TRUE")),
	))
	if r.Candidate == nil || r.Candidate.Claim.Name != "a" || r.Census.NotDue != 1 {
		t.Fatalf("candidate %+v, census %+v", r.Candidate, r.Census)
	}
	if len(r.Bad) != 3 {
		t.Fatalf("bad %+v, want 3", r.Bad)
	}
	for _, b := range r.Bad {
		if b.Effect != "the request is ignored" || b.Object == "" || b.Key == "" {
			t.Errorf("bad %+v", b)
		}
	}
}

// A skip is judged against the last moment a rotation may start and end by
// the deadline: with nightly windows (02:00–06:00) and a deadline at
// Wednesday 14:00, Wednesday 06:00; a blackout over Wednesday's window
// moves it to Tuesday 06:00.
func TestSkipPastTheLastUsableStart(t *testing.T) {
	wed := func(h int) time.Time { return time.Date(2026, 12, 2, h, 0, 0, 0, time.UTC) }
	skip := func(at time.Time) func(*karpv1.NodeClaim) {
		return annotate(v1alpha1.AnnotationSkipUntil, at.Format(time.RFC3339))
	}
	spec := nightly()
	in := input(t, spec, claim("before", 50*time.Hour, skip(wed(5))), claim("after", 50*time.Hour, skip(wed(7))))
	r := Take(in)
	if f := r.Figures["before"]; !f.LastStart.Equal(wed(6)) || f.SkipsPastLastStart(now) {
		t.Errorf("before: last start %s, flagged %v; want Wed 06:00, not flagged", f.LastStart, f.SkipsPastLastStart(now))
	}
	if f := r.Figures["after"]; !f.SkipsPastLastStart(now) {
		t.Errorf("after: a skip to Wed 07:00 is before the deadline but after the last window; last start %s", f.LastStart)
	}
	spec.Blackouts = []v1alpha1.Blackout{{Start: wed(0).Format(time.RFC3339), End: wed(12).Format(time.RFC3339)}}
	r = Take(input(t, spec, claim("before", 50*time.Hour, skip(wed(5)))))
	if f := r.Figures["before"]; !f.LastStart.Equal(wed(6).Add(-24*time.Hour)) || !f.SkipsPastLastStart(now) {
		t.Errorf("blacked out: last start %s, flagged %v; want Tue 06:00, flagged", f.LastStart, f.SkipsPastLastStart(now))
	}
}

// The last usable start is looked for over the claim's life: once the last
// window before the deadline is over, a skip still in force is past it.
func TestSkipPastALastStartAlreadyGone(t *testing.T) {
	wed := func(h, m int) time.Time { return time.Date(2026, 12, 2, h, m, 0, 0, time.UTC) }
	in := input(t, nightly(), claim("late", 50*time.Hour, annotate(v1alpha1.AnnotationSkipUntil, wed(7, 0).Format(time.RFC3339))))
	in.Now = wed(6, 30)
	f := Take(in).Figures["late"]
	if !f.LastStart.Equal(wed(6, 0)) || !f.SkipsPastLastStart(in.Now) {
		t.Errorf("last start %s, flagged %v; want Wed 06:00, flagged", f.LastStart, f.SkipsPastLastStart(in.Now))
	}
}

// A skip holds back a claim that is otherwise due: past its age threshold,
// or asked for with rotate-next; a skipped claim not yet due is not held
// by the skip.
func TestSkipHeldNamesTheClaimsOtherwiseDue(t *testing.T) {
	until := annotate(v1alpha1.AnnotationSkipUntil, now.Add(time.Hour).Format(time.RFC3339))
	r := Take(input(t, alwaysOpen(),
		claim("due", 20*time.Minute, until),
		claim("asked", 10*24*time.Hour, until, annotate(v1alpha1.AnnotationRotateNext, "true")),
		claim("young", 10*24*time.Hour, until)))
	var held []string
	for _, f := range r.SkipHeld {
		held = append(held, f.Claim.Name)
	}
	if r.Candidate != nil || r.Census.Skipped != 3 || strings.Join(held, ",") != "due,asked" {
		t.Errorf("candidate %+v, skipped %d, held %v; want none, 3, [due asked]", r.Candidate, r.Census.Skipped, held)
	}
}
