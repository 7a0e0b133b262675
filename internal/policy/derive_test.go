package policy

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

func nodePool(expireAfter string, tgp *time.Duration) *karpv1.NodePool {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "api"}}
	np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration(expireAfter)
	if tgp != nil {
		np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: *tgp}
	}
	return np
}

func TestSettingsDerive(t *testing.T) {
	// The worked example: Tokyo Wed and Sat 02:00–06:00, K = 2, readyTimeout 15m.
	s, err := Resolve(v1alpha1.RotationPolicySpec{MaintenanceWindows: []v1alpha1.MaintenanceWindow{
		{Timezone: "Asia/Tokyo", Days: []v1alpha1.Weekday{"Wed", "Sat"}, Start: "02:00", End: "06:00"}}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	hour, half := time.Hour, 30*time.Minute
	cases := []struct {
		name       string
		pool       *karpv1.NodePool
		expire     time.Duration // 0: Never
		tgpUnset   bool
		tRot, a    time.Duration
		noDeadline bool
	}{
		// t_rot = 15m + 1h + 2m; A = 14d − (2·4d + 1h17m)
		{"336h and 1h", nodePool("336h", &hour), 336 * time.Hour, false, 77 * time.Minute, 5*24*time.Hour + 22*time.Hour + 43*time.Minute, false},
		// t_rot = 15m + 30m + 2m; A = 14d − (8d + 47m)
		{"336h and 30m", nodePool("336h", &half), 336 * time.Hour, false, 47 * time.Minute, 5*24*time.Hour + 23*time.Hour + 13*time.Minute, false},
		// tGP unset: t_rot assumes 1h
		{"336h and no tGP", nodePool("336h", nil), 336 * time.Hour, true, 77 * time.Minute, 5*24*time.Hour + 22*time.Hour + 43*time.Minute, false},
		{"Never", nodePool("Never", &hour), 0, false, 77 * time.Minute, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, d := s.Derive(c.pool, now)
			if c.noDeadline != (in.ExpireAfter == nil) || (!c.noDeadline && *in.ExpireAfter != c.expire) {
				t.Errorf("expireAfter input = %v, want %s", in.ExpireAfter, c.expire)
			}
			if (in.TerminationGrace == nil) != c.tgpUnset {
				t.Errorf("tGP input = %v, want unset %v", in.TerminationGrace, c.tgpUnset)
			}
			if d.NoDeadline != c.noDeadline || d.TGPUnset != c.tgpUnset || d.TRot != c.tRot || d.A != c.a {
				t.Errorf("derivation: no deadline %v, tGP unset %v, t_rot %s, A %s; want %v %v %s %s",
					d.NoDeadline, d.TGPUnset, schedule.FormatDuration(d.TRot), schedule.FormatDuration(d.A),
					c.noDeadline, c.tgpUnset, schedule.FormatDuration(c.tRot), schedule.FormatDuration(c.a))
			}
			if d.Cycle.P != 4*24*time.Hour || d.C != 10 || in.MinRotationChances != 2 {
				t.Errorf("P = %s, C = %d, K = %d; want 4d, 10, 2", schedule.FormatDuration(d.Cycle.P), d.C, in.MinRotationChances)
			}
		})
	}
}

func TestSettingsDeriveWithoutWindows(t *testing.T) {
	s, err := Resolve(v1alpha1.RotationPolicySpec{})
	if err != nil {
		t.Fatal(err)
	}
	hour := time.Hour
	_, d := s.Derive(nodePool("336h", &hour), time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	if d.Cycle.HasOccurrence || d.C != 0 || d.G != 0 || d.Lead != d.TRot {
		t.Errorf("no windows: %+v", d)
	}
}

func TestAssessJoinsScheduleAndPolicyFindings(t *testing.T) {
	s, err := Resolve(v1alpha1.RotationPolicySpec{MinRotationChances: 1, Surge: v1alpha1.SurgeSpec{
		MatchNodeRequirements: v1alpha1.MatchNodeRequirements{Required: []string{"kubernetes.io/arch"}}}})
	if err != nil {
		t.Fatal(err)
	}
	e := 14 * 24 * time.Hour
	in := s.Inputs(&e, nil)
	d := schedule.Derive(in, s.Calendar.Measure(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)))
	var got []string
	for _, f := range s.Assess(in, d, schedule.Population{Nodes: 5}) {
		got = append(got, string(f.Severity)+" "+f.Reason)
	}
	// The schedule's layer 1 in its order, then the policy's own warning.
	want := []string{"Fatal NoWindows", "Warning KBelowTwo", "Info TGPUnset", "Warning ZoneNotRequired"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("findings = %v, want %v", got, want)
	}
	// With the zone required and nothing to warn about, nothing is added.
	s, _ = Resolve(v1alpha1.RotationPolicySpec{MaintenanceWindows: []v1alpha1.MaintenanceWindow{
		{Timezone: "Asia/Tokyo", Days: []v1alpha1.Weekday{"Wed", "Sat"}, Start: "02:00", End: "06:00"}}})
	hour := time.Hour
	in = s.Inputs(&e, &hour)
	d = schedule.Derive(in, s.Calendar.Measure(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)))
	if fs := s.Assess(in, d, schedule.Population{Nodes: 5}); len(fs) != 0 {
		t.Errorf("the worked example has findings %+v", fs)
	}
}

// The 21-day cap is EKS Auto Mode's: a pool on its NodeClass is held to
// it, one on self-managed Karpenter's EC2NodeClass is not.
func TestLifetimeCapOnlyOnEKSAutoMode(t *testing.T) {
	s, err := Resolve(v1alpha1.RotationPolicySpec{MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Sat"}, Start: "02:00", End: "06:00"}}})
	if err != nil {
		t.Fatal(err)
	}
	e := 30 * 24 * time.Hour
	for group, want := range map[string]bool{"eks.amazonaws.com": true, "karpenter.k8s.aws": false, "karpenter.kwok.sh": false} {
		np := &karpv1.NodePool{}
		np.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
		np.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: group, Kind: "NodeClass", Name: "default"}
		in, d := s.Derive(np, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
		found := false
		for _, f := range s.Assess(in, d, schedule.Population{}) {
			found = found || f.Reason == "HardCapExceeded"
		}
		if found != want {
			t.Errorf("nodeClassRef group %s: HardCapExceeded %v, want %v", group, found, want)
		}
	}
}
