package plan

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

const examplePolicy = "../../docs/examples/api-policy.yaml"

// mon is Monday 2026-11-30 12:00 UTC, 21:00 in Tokyo.
var mon = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func dptr(d time.Duration) *time.Duration { return &d }

func workedInput(t *testing.T) Input {
	t.Helper()
	p, err := LoadPolicy(examplePolicy, "")
	if err != nil {
		t.Fatal(err)
	}
	return Input{Policy: p, NodePool: "api", ExpireAfter: dptr(14 * 24 * time.Hour), TerminationGrace: dptr(time.Hour), Now: mon}
}

func win(tz string, days []v1alpha1.Weekday, start, end string) v1alpha1.MaintenanceWindow {
	return v1alpha1.MaintenanceWindow{Timezone: tz, Days: days, Start: start, End: end}
}

func reasons(fs []schedule.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Severity)+" "+f.Reason)
	}
	return out
}

func TestBuildWorkedExample(t *testing.T) {
	r, err := Build(workedInput(t))
	if err != nil {
		t.Fatal(err)
	}
	want := Report{
		Policy: "api", NodePool: "api", ExpireAfter: "14d", TerminationGracePeriod: "1h",
		P: "4d", D: "4h", Gap: "2d20h", TRot: "1h17m", TRotEst: "15m", A: "5d22h43m", AgeThreshold: "auto", G: 2, C: 10,
		MaxUnavailable: "1", InForce: schedule.InForce{N: 1, Why: "maxUnavailable 1"},
		Coverage: schedule.Coverage{Covered: true, Capacity: 10, InForce: 1},
	}
	got := r
	got.NextOccurrences, got.Findings = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("report\n got %+v\nwant %+v", got, want)
	}
	if len(r.Findings) != 0 || r.Fatal {
		t.Errorf("findings = %v", reasons(r.Findings))
	}
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	starts := []time.Time{
		time.Date(2026, 12, 2, 2, 0, 0, 0, tokyo), // Wed
		time.Date(2026, 12, 5, 2, 0, 0, 0, tokyo), // Sat
		time.Date(2026, 12, 9, 2, 0, 0, 0, tokyo), // Wed
	}
	if len(r.NextOccurrences) != len(starts) {
		t.Fatalf("next occurrences = %+v", r.NextOccurrences)
	}
	for i, s := range starts {
		o := r.NextOccurrences[i]
		if !o.Start.Equal(s) || !o.End.Equal(s.Add(4*time.Hour)) || o.Timezone != "Asia/Tokyo" || o.Start.Location().String() != "Asia/Tokyo" {
			t.Errorf("occurrence %d = %+v, want %s for 4h in Asia/Tokyo", i, o, s)
		}
	}
}

func TestBuildVariants(t *testing.T) {
	all := []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
	cases := []struct {
		name   string
		mutate func(*Input)
		check  func(*testing.T, Report)
	}{
		{"Never and unset", func(in *Input) { in.ExpireAfter, in.TerminationGrace = nil, nil }, func(t *testing.T, r Report) {
			if r.ExpireAfter != "Never" || r.TerminationGracePeriod != "unset" || r.A != "0s" || r.G != 0 || r.AgeThreshold != "auto" || r.TRot != "1h17m" {
				t.Errorf("report = %+v", r)
			}
			if got := reasons(r.Findings); !reflect.DeepEqual(got, []string{"Info TGPUnset"}) || r.Fatal {
				t.Errorf("findings = %v fatal %v", got, r.Fatal)
			}
		}},
		{"an override", func(in *Input) { in.Policy.Spec.AgeThreshold = "216h" }, func(t *testing.T, r Report) {
			// G = floor((14d − 9d − 1h17m) / 4d) = 1
			if r.AgeThreshold != "override" || r.A != "9d" || r.G != 1 {
				t.Errorf("report = %+v", r)
			}
			if got := reasons(r.Findings); !reflect.DeepEqual(got, []string{"Warning OverrideGBelowK"}) {
				t.Errorf("findings = %v", got)
			}
		}},
		{"an override with Never", func(in *Input) { in.Policy.Spec.AgeThreshold, in.ExpireAfter = "216h", nil }, func(t *testing.T, r Report) {
			if r.AgeThreshold != "override" || r.A != "0s" || r.G != 0 || len(r.Findings) != 0 {
				t.Errorf("report = %+v", r)
			}
		}},
		{"open 24/7", func(in *Input) {
			in.Policy.Spec.MaintenanceWindows = []v1alpha1.MaintenanceWindow{win("UTC", all, "00:00", "24:00")}
		}, func(t *testing.T, r Report) {
			// lead = 2 · 1m + 1h17m
			if !r.AlwaysOpen || r.P != "1m" || r.D != "7d" || r.Gap != "none" || r.A != "13d22h41m" || len(r.NextOccurrences) != 0 {
				t.Errorf("report = %+v", r)
			}
		}},
		{"no windows is fatal", func(in *Input) { in.Policy.Spec.MaintenanceWindows = nil }, func(t *testing.T, r Report) {
			if !r.Fatal || r.P != "0s" || r.C != 0 || len(r.NextOccurrences) != 0 {
				t.Errorf("report = %+v", r)
			}
			if got := reasons(r.Findings); !reflect.DeepEqual(got, []string{"Fatal NoWindows"}) {
				t.Errorf("findings = %v", got)
			}
		}},
		{"the policy's own findings come last", func(in *Input) {
			in.TerminationGrace = nil
			in.Policy.Spec.Surge.MatchNodeRequirements.Required = []string{"kubernetes.io/arch"}
		}, func(t *testing.T, r Report) {
			if got := reasons(r.Findings); !reflect.DeepEqual(got, []string{"Info TGPUnset", "Warning ZoneNotRequired"}) || r.Fatal {
				t.Errorf("findings = %v", got)
			}
		}},
		{"the population reaches layer 2", func(in *Input) { in.Population = schedule.Population{Nodes: 15} }, func(t *testing.T, r Report) {
			if got := reasons(r.Findings); !reflect.DeepEqual(got, []string{"Warning ThroughputBelowArrival"}) || r.Fatal {
				t.Errorf("findings = %v", got)
			}
		}},
		{"a pool-less report", func(in *Input) { in.NodePool = "" }, func(t *testing.T, r Report) {
			if r.NodePool != "" || r.Policy != "api" {
				t.Errorf("report = %+v", r)
			}
		}},
		{"open now: the current occurrence comes first", func(in *Input) {
			in.Now = time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC) // Wed 03:00 in Tokyo
		}, func(t *testing.T, r Report) {
			if len(r.NextOccurrences) != 3 || !r.NextOccurrences[0].Start.Equal(time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)) {
				t.Errorf("next occurrences = %+v", r.NextOccurrences)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := workedInput(t)
			c.mutate(&in)
			r, err := Build(in)
			if err != nil {
				t.Fatal(err)
			}
			c.check(t, r)
		})
	}
}

func TestBuildRejectsAnInvalidPolicy(t *testing.T) {
	in := workedInput(t)
	in.Policy.Spec.Surge.ReadyTimeout = "fifteen minutes"
	r, err := Build(in)
	if err == nil || !strings.Contains(err.Error(), `spec.surge.readyTimeout: "fifteen minutes" is not a Go duration`) {
		t.Errorf("error = %v", err)
	}
	if !reflect.DeepEqual(r, Report{}) {
		t.Errorf("a failed build returned %+v", r)
	}
}

func TestNextOccurrences(t *testing.T) {
	calendar := func(ws ...v1alpha1.MaintenanceWindow) schedule.Calendar {
		t.Helper()
		s, err := policy.Resolve(v1alpha1.RotationPolicySpec{MaintenanceWindows: ws})
		if err != nil {
			t.Fatal(err)
		}
		return s.Calendar
	}
	daily := calendar(win("UTC", []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}, "02:00", "03:00"))
	for n := 0; n <= 4; n++ {
		if got := nextOccurrences(daily, mon, n); len(got) != n {
			t.Errorf("n = %d: %d occurrences", n, len(got))
		}
	}
	got := nextOccurrences(daily, mon, 2)
	if !got[0].Start.Equal(time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)) || !got[1].Start.Equal(time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)) {
		t.Errorf("daily = %+v", got)
	}
	// A union of two zones shows each occurrence in the zone that opened it.
	mixed := calendar(
		win("Asia/Tokyo", []v1alpha1.Weekday{"Wed"}, "02:00", "06:00"),    // Tue 17:00–21:00Z
		win("Europe/Berlin", []v1alpha1.Weekday{"Thu"}, "01:00", "02:00"), // Thu 00:00–01:00Z
	)
	got = nextOccurrences(mixed, mon, 2)
	if len(got) != 2 || got[0].Timezone != "Asia/Tokyo" || got[0].Start.Hour() != 2 || got[1].Timezone != "Europe/Berlin" || got[1].Start.Hour() != 1 {
		t.Errorf("mixed = %+v", got)
	}
	// An occurrence a week long is the 24/7 union: nothing to list.
	if got := nextOccurrences(calendar(win("UTC", []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}, "00:00", "00:00")), mon, 3); len(got) != 0 {
		t.Errorf("24/7 = %+v", got)
	}
	if got := nextOccurrences(calendar(), mon, 3); len(got) != 0 {
		t.Errorf("no windows = %+v", got)
	}
}
