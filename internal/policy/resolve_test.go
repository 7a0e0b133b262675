package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestResolveDefaults(t *testing.T) {
	s, err := Resolve(v1alpha1.RotationPolicySpec{})
	if err != nil {
		t.Fatal(err)
	}
	if s.MinRotationChances != 2 || s.ReadyTimeout != 15*time.Minute || s.CooldownAfter != 10*time.Minute ||
		s.RetryBackoff != 30*time.Minute || s.MaxUnavailable != 1 || s.AgeThreshold != nil || s.FailurePause != nil {
		t.Errorf("defaults = %+v", s)
	}
	if !s.RequiresZone() || len(s.Required) != 3 {
		t.Errorf("required = %v", s.Required)
	}
	if !s.Calendar.Empty() {
		t.Error("no windows should give an empty calendar")
	}
}

func TestResolveValues(t *testing.T) {
	spec := v1alpha1.RotationPolicySpec{
		AgeThreshold: "120h", MinRotationChances: 3,
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "Asia/Tokyo", Days: []v1alpha1.Weekday{"Wed", "Sat"}, Start: "02:00", End: "06:00"}},
		Surge: v1alpha1.SurgeSpec{ReadyTimeout: "20m", CooldownAfter: "0s", FailurePause: "1h", RetryBackoff: "45m",
			MatchNodeRequirements: v1alpha1.MatchNodeRequirements{Required: []string{"kubernetes.io/arch"}}},
	}
	s, err := Resolve(spec)
	if err != nil {
		t.Fatal(err)
	}
	if *s.AgeThreshold != 120*time.Hour || s.MinRotationChances != 3 || s.CooldownAfter != 0 || *s.FailurePause != time.Hour || s.RetryBackoff != 45*time.Minute {
		t.Errorf("settings = %+v", s)
	}
	if s.RequiresZone() {
		t.Error("zone was dropped from required")
	}
	in := s.Inputs(nil, nil)
	if in.ExpireAfter != nil || in.ReadyTimeout != 20*time.Minute || in.MinRotationChances != 3 {
		t.Errorf("inputs = %+v", in)
	}
}

func TestResolveErrorsNameTheField(t *testing.T) {
	spec := v1alpha1.RotationPolicySpec{
		AgeThreshold: "soon", PrePull: v1alpha1.PrePullSpec{Enabled: true, UsePullSecrets: true},
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{
			{Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon"}, Start: "02:00", End: "03:00"},
			{Timezone: "Mars/Olympus_Mons", Days: []v1alpha1.Weekday{"Mon"}, Start: "02:00", End: "03:00"},
		},
		Surge: v1alpha1.SurgeSpec{MaxUnavailable: ptr.To(intstr.FromString("0%")), ReadyTimeout: "0s", RetryBackoff: "-5m", CooldownAfter: "1x", DrainEstimate: "ten minutes", StartCutoff: "-1m"},
		Blackouts: []v1alpha1.Blackout{
			{Start: "2026-12-24T00:00:00Z", End: "2026-12-27T00:00:00Z"},
			{Start: "Christmas", End: "2026-12-27T00:00:00Z"},
			{Start: "2026-12-27T00:00:00Z", End: "2026-12-24T00:00:00Z"},
		},
	}
	_, err := Resolve(spec)
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{
		`spec.ageThreshold: "soon" is not a Go duration`,
		`spec.surge.maxUnavailable: "0%" must be`,
		`spec.maintenanceWindows[1].timezone "Mars/Olympus_Mons": not a loadable IANA time zone`,
		`spec.surge.readyTimeout: "0s" must be greater than 0`,
		`spec.surge.retryBackoff: "-5m" must be greater than 0`,
		`spec.surge.cooldownAfter: "1x" is not a Go duration`,
		`spec.surge.drainEstimate: "ten minutes" is not a Go duration`,
		`spec.surge.startCutoff: "-1m"`,
		`spec.blackouts[1]: start "Christmas" and end "2026-12-27T00:00:00Z" must be RFC3339 times`,
		`spec.blackouts[2]: end 2026-12-24T00:00:00Z is not after start 2026-12-27T00:00:00Z`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "maintenanceWindows[0]") || strings.Contains(err.Error(), "blackouts[0]") {
		t.Errorf("a valid entry was reported: %v", err)
	}
}

// Valid blackouts and a startCutoff resolve into the timing.
func TestResolveBlackoutsAndStartCutoff(t *testing.T) {
	spec := v1alpha1.RotationPolicySpec{
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon"}, Start: "02:00", End: "03:00"}},
		Surge:              v1alpha1.SurgeSpec{StartCutoff: "5m"},
		Blackouts:          []v1alpha1.Blackout{{Start: "2026-12-24T00:00:00+01:00", End: "2026-12-27T00:00:00Z", Reason: "holidays"}},
	}
	s, err := Resolve(spec)
	if err != nil {
		t.Fatal(err)
	}
	if s.StartCutoff == nil || *s.StartCutoff != 5*time.Minute || len(s.Blackouts) != 1 ||
		!s.Blackouts[0].Start.Equal(time.Date(2026, 12, 23, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("settings %+v %+v", s.StartCutoff, s.Blackouts)
	}
}
