package policy

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

func TestResolveFieldEdges(t *testing.T) {
	d := func(v time.Duration) *time.Duration { return &v }
	cases := []struct {
		name  string
		spec  v1alpha1.RotationPolicySpec
		check func(Settings) bool
		err   string // "" = no error
	}{
		{"K of 1 is allowed", v1alpha1.RotationPolicySpec{MinRotationChances: 1},
			func(s Settings) bool { return s.MinRotationChances == 1 }, ""},
		{"negative K", v1alpha1.RotationPolicySpec{MinRotationChances: -1}, nil,
			"spec.minRotationChances: -1 is below the floor of 1"},
		{"maxUnavailable unset is auto, the CRD's default, capped at 10%", v1alpha1.RotationPolicySpec{},
			func(s Settings) bool {
				return s.Concurrency == schedule.Concurrency{Auto: true, Cap: DefaultMaxUnavailableCap} && s.MaxUnavailable == 1
			}, ""},
		{"maxUnavailable 4", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{MaxUnavailable: ptr.To(intstr.FromInt32(4))}},
			func(s Settings) bool { return !s.Concurrency.Auto && s.Concurrency.Count == 4 && s.MaxUnavailable == 1 }, ""},
		{"maxUnavailable a percentage", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{MaxUnavailable: ptr.To(intstr.FromString("25%"))}},
			func(s Settings) bool { return s.Concurrency.Percent == 25 && s.Concurrency.String() == "25%" }, ""},
		{"maxUnavailable auto with a count for a cap", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{
			MaxUnavailable: ptr.To(intstr.FromString("auto")), MaxUnavailableCap: ptr.To(intstr.FromInt32(5))}},
			func(s Settings) bool { return s.Concurrency.Auto && s.Concurrency.Cap == schedule.Amount{Count: 5} }, ""},
		{"maxUnavailable 0", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{MaxUnavailable: ptr.To(intstr.FromInt32(0))}}, nil,
			"spec.surge.maxUnavailable: 0 must be at least 1"},
		{"negative maxUnavailable", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{MaxUnavailable: ptr.To(intstr.FromInt32(-1))}}, nil,
			"spec.surge.maxUnavailable: -1 must be at least 1"},
		{"maxUnavailable 0%", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{MaxUnavailable: ptr.To(intstr.FromString("0%"))}}, nil,
			`spec.surge.maxUnavailable: "0%" must be an integer of at least 1, a percentage from 1% to 100% such as "10%", or "auto"`},
		{"maxUnavailable 150%", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{MaxUnavailable: ptr.To(intstr.FromString("150%"))}}, nil,
			`spec.surge.maxUnavailable: "150%" must be`},
		{"maxUnavailable garbage", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{MaxUnavailable: ptr.To(intstr.FromString("Auto"))}}, nil,
			`spec.surge.maxUnavailable: "Auto" must be`},
		{"maxUnavailableCap auto is no cap", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{MaxUnavailableCap: ptr.To(intstr.FromString("auto"))}}, nil,
			`spec.surge.maxUnavailableCap: "auto" must be an integer of at least 1, a percentage from 1% to 100% such as "10%"`},
		{"ageThreshold auto", v1alpha1.RotationPolicySpec{AgeThreshold: "auto"},
			func(s Settings) bool { return s.AgeThreshold == nil }, ""},
		{"ageThreshold override", v1alpha1.RotationPolicySpec{AgeThreshold: "90m"},
			func(s Settings) bool { return reflect.DeepEqual(s.AgeThreshold, d(90*time.Minute)) }, ""},
		{"ageThreshold zero", v1alpha1.RotationPolicySpec{AgeThreshold: "0s"}, nil,
			`spec.ageThreshold: "0s" must be greater than 0`},
		{"ageThreshold negative", v1alpha1.RotationPolicySpec{AgeThreshold: "-1h"}, nil,
			`spec.ageThreshold: "-1h" must be greater than 0`},
		{"ageThreshold with a day unit", v1alpha1.RotationPolicySpec{AgeThreshold: "5d"}, nil,
			`spec.ageThreshold: "5d" is not a Go duration (e.g. 15m, 1h30m)`},
		{"ageThreshold in another case", v1alpha1.RotationPolicySpec{AgeThreshold: "Auto"}, nil,
			`spec.ageThreshold: "Auto" is not a Go duration`},
		{"cooldownAfter zero", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{CooldownAfter: "0s"}},
			func(s Settings) bool { return s.CooldownAfter == 0 }, ""},
		{"cooldownAfter negative", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{CooldownAfter: "-1s"}}, nil,
			`spec.surge.cooldownAfter: "-1s" must not be negative`},
		{"readyTimeout negative", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{ReadyTimeout: "-1m"}}, nil,
			`spec.surge.readyTimeout: "-1m" must be greater than 0`},
		{"failurePause zero is set, not unset", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{FailurePause: "0s"}},
			func(s Settings) bool { return reflect.DeepEqual(s.FailurePause, d(0)) }, ""},
		{"failurePause negative", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{FailurePause: "-1m"}}, nil,
			`spec.surge.failurePause: "-1m" must not be negative`},
		{"estimates", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{DrainEstimate: "7m", ProvisioningEstimate: "1m30s"}},
			func(s Settings) bool {
				return reflect.DeepEqual(s.DrainEstimate, d(7*time.Minute)) && reflect.DeepEqual(s.ProvisioningEstimate, d(90*time.Second))
			}, ""},
		{"provisioningEstimate malformed", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{ProvisioningEstimate: "5 m"}}, nil,
			`spec.surge.provisioningEstimate: "5 m" is not a Go duration`},
		{"retryBackoff", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{RetryBackoff: "1h"}},
			func(s Settings) bool { return s.RetryBackoff == time.Hour }, ""},
		{"flags and preferred keys are copied", v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{
			WholeNodeReservation: true, ForcefulFallback: v1alpha1.ForcefulFallback{Enabled: true},
			MatchNodeRequirements: v1alpha1.MatchNodeRequirements{Preferred: []string{"example.com/gen"}}}},
			func(s Settings) bool {
				return s.WholeNodeReservation && s.ForcefulFallback && reflect.DeepEqual(s.Preferred, []string{"example.com/gen"}) &&
					reflect.DeepEqual(s.Required, DefaultRequired)
			}, ""},
		{"unset fields are unset", v1alpha1.RotationPolicySpec{},
			func(s Settings) bool {
				return s.DrainEstimate == nil && s.ProvisioningEstimate == nil && s.Preferred == nil && !s.ForcefulFallback && !s.WholeNodeReservation
			}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Resolve(c.spec)
			if c.err == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if !c.check(s) {
					t.Errorf("settings = %+v", s)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.err) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error = %v, want exactly one starting %q", err, c.err)
			}
		})
	}
}

func TestResolveReportsEveryProblemOnce(t *testing.T) {
	spec := v1alpha1.RotationPolicySpec{
		MinRotationChances: -2, AgeThreshold: "0s",
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{
			{Timezone: "UTC", Days: []v1alpha1.Weekday{"Funday"}, Start: "02:00", End: "03:00"},
			{Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon"}, Start: "25:00", End: "03:00"},
			{Timezone: "", Days: []v1alpha1.Weekday{"Mon"}, Start: "02:00", End: "03:00"},
		},
		Surge: v1alpha1.SurgeSpec{FailurePause: "-1s", ProvisioningEstimate: "x"},
	}
	_, err := Resolve(spec)
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %v is not a joined error", err)
	}
	want := []string{
		"spec.minRotationChances: -2 is below the floor of 1",
		`spec.ageThreshold: "0s" must be greater than 0`,
		`spec.surge.failurePause: "-1s" must not be negative`,
		`spec.surge.provisioningEstimate: "x" is not a Go duration (e.g. 15m, 1h30m)`,
		`spec.maintenanceWindows[0].days[0] "Funday": not one of Mon, Tue, Wed, Thu, Fri, Sat, Sun`,
		`spec.maintenanceWindows[1].start "25:00": hour must be 00..23`,
		"spec.maintenanceWindows[2].timezone: must not be empty",
	}
	got := joined.Unwrap()
	if len(got) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(got), len(want), err)
	}
	for i, w := range want {
		if got[i].Error() != w {
			t.Errorf("error %d = %q, want %q", i, got[i], w)
		}
	}
}

func TestResolveWindowErrorKeepsTheCause(t *testing.T) {
	_, err := Resolve(v1alpha1.RotationPolicySpec{MaintenanceWindows: []v1alpha1.MaintenanceWindow{
		{Timezone: "Nowhere/Atlantis", Days: []v1alpha1.Weekday{"Mon"}, Start: "02:00", End: "03:00"},
	}})
	// The window error names the field and keeps the zone loader's cause.
	want := `spec.maintenanceWindows[0].timezone "Nowhere/Atlantis": not a loadable IANA time zone: unknown time zone Nowhere/Atlantis`
	if err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestResolveCalendarKeepsTheValidWindows(t *testing.T) {
	s, err := Resolve(v1alpha1.RotationPolicySpec{MaintenanceWindows: []v1alpha1.MaintenanceWindow{
		{Timezone: "UTC", Days: []v1alpha1.Weekday{"Mon"}, Start: "02:00", End: "06:00"},
		{Timezone: "UTC", Days: []v1alpha1.Weekday{"Thu"}, Start: "02:00", End: "99:00"},
		{Timezone: "UTC", Days: []v1alpha1.Weekday{"Fri"}, Start: "22:00", End: "02:00"},
	}})
	if err == nil || !strings.Contains(err.Error(), "spec.maintenanceWindows[1].end") {
		t.Fatalf("error = %v", err)
	}
	at := func(s string) time.Time {
		v, _ := time.Parse("2006-01-02 15:04", s)
		return v
	}
	for _, c := range []struct {
		t    string
		open bool
	}{
		{"2026-11-30 03:00", true},  // Mon
		{"2026-12-03 03:00", false}, // Thu: the invalid entry is dropped
		{"2026-12-05 01:00", true},  // Fri 22:00–Sat 02:00
	} {
		if got := s.Calendar.IsOpen(at(c.t)); got != c.open {
			t.Errorf("open at %s = %v, want %v", c.t, got, c.open)
		}
	}
}

func TestRequiredKeysAndZoneFinding(t *testing.T) {
	cases := []struct {
		name     string
		required []string
		want     []string
		zone     bool
	}{
		{"unset takes the defaults", nil, []string{corev1.LabelTopologyZone, corev1.LabelArchStable, "karpenter.sh/capacity-type"}, true},
		{"an explicit empty list is kept", []string{}, []string{}, false},
		{"zone among others", []string{"kubernetes.io/arch", corev1.LabelTopologyZone}, []string{"kubernetes.io/arch", corev1.LabelTopologyZone}, true},
		{"the legacy zone label is not the zone", []string{"failure-domain.beta.kubernetes.io/zone"}, []string{"failure-domain.beta.kubernetes.io/zone"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Resolve(v1alpha1.RotationPolicySpec{Surge: v1alpha1.SurgeSpec{MatchNodeRequirements: v1alpha1.MatchNodeRequirements{Required: c.required}}})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Required, c.want) || s.RequiresZone() != c.zone {
				t.Errorf("required = %v (zone %v), want %v (zone %v)", s.Required, s.RequiresZone(), c.want, c.zone)
			}
			fs := s.Findings()
			if c.zone {
				if len(fs) != 0 {
					t.Errorf("findings = %+v, want none", fs)
				}
				return
			}
			if len(fs) != 1 || fs[0].Reason != "ZoneNotRequired" || fs[0].Severity != schedule.Warning || fs[0].Layer != 1 ||
				!strings.Contains(fs[0].Message, corev1.LabelTopologyZone) || fs[0].Remedy == "" {
				t.Errorf("findings = %+v, want one ZoneNotRequired warning", fs)
			}
		})
	}
}

func TestInputsCarryThePoolValues(t *testing.T) {
	s, err := Resolve(v1alpha1.RotationPolicySpec{MinRotationChances: 4, Surge: v1alpha1.SurgeSpec{RetryBackoff: "2h"}})
	if err != nil {
		t.Fatal(err)
	}
	e, tgp := 14*24*time.Hour, 90*time.Second
	in := s.Inputs(&e, &tgp)
	if *in.ExpireAfter != e || *in.TerminationGrace != tgp || in.MinRotationChances != 4 || in.RetryBackoff != 2*time.Hour || in.ReadyTimeout != DefaultReadyTimeout {
		t.Errorf("inputs = %+v", in)
	}
	if in = s.Inputs(nil, nil); in.ExpireAfter != nil || in.TerminationGrace != nil {
		t.Errorf("nil pool values = %+v", in)
	}
}
