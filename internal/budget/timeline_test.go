package budget

import (
	"fmt"
	"strings"
	"testing"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

func spans(ss []Span) string {
	var b strings.Builder
	for _, s := range ss {
		fmt.Fprintf(&b, "%s–%s %d %s\n", s.Start.Format("Mon 15:04"), s.End.Format("Mon 15:04"), s.Allowed, s.Budget)
	}
	return b.String()
}

// The timeline reads Of at each edge of a scheduled budget, so each span
// agrees with Of at every instant inside it.
func TestTimeline(t *testing.T) {
	business := scheduled("0", "0 9 * * mon-fri", "8h")
	night := scheduled("3", "0 22 * * *", "4h") // across midnight
	for _, c := range []struct {
		name string
		np   *karpv1.NodePool
		from string
		to   string
		want string
	}{
		{name: "no budget", np: pool(), from: "Mon 2026-12-07 00:00", to: "Tue 2026-12-08 00:00",
			want: fmt.Sprintf("Mon 00:00–Tue 00:00 %d \n", Unbounded)},
		{name: "Karpenter's default, always in force", np: pool(karpv1.Budget{Nodes: "10%"}), from: "Mon 2026-12-07 00:00", to: "Tue 2026-12-08 00:00",
			want: "Mon 00:00–Tue 00:00 50 nodes=10%\n"},
		{name: "business hours 0 beside 10%", np: pool(karpv1.Budget{Nodes: "10%"}, business), from: "Mon 2026-12-07 00:00", to: "Tue 2026-12-08 12:00",
			want: "Mon 00:00–Mon 09:00 50 nodes=10%\n" +
				"Mon 09:00–Mon 17:00 0 nodes=0 (schedule \"0 9 * * mon-fri\" for 8h)\n" +
				"Mon 17:00–Tue 09:00 50 nodes=10%\n" +
				"Tue 09:00–Tue 12:00 0 nodes=0 (schedule \"0 9 * * mon-fri\" for 8h)\n"},
		{name: "an occurrence begun before from, across midnight", np: pool(night), from: "Mon 2026-12-07 00:00", to: "Tue 2026-12-08 00:00",
			want: fmt.Sprintf("Mon 00:00–Mon 02:00 3 nodes=3 (schedule \"0 22 * * *\" for 4h)\nMon 02:00–Mon 22:00 %d \nMon 22:00–Tue 00:00 3 nodes=3 (schedule \"0 22 * * *\" for 4h)\n", Unbounded)},
		{name: "a schedule too frequent to walk is always in force", np: pool(scheduled("2", "* * * * *", "30s")), from: "Mon 2026-12-07 00:00", to: "Mon 2026-12-21 00:00",
			want: "Mon 00:00–Mon 00:00 2 nodes=2 (schedule \"* * * * *\" for 30s)\n"},
		{name: "a schedule Karpenter cannot read fails closed", np: pool(scheduled("5", "not a schedule", "1h")), from: "Mon 2026-12-07 00:00", to: "Tue 2026-12-08 00:00",
			want: "Mon 00:00–Tue 00:00 0 nodes=5 (schedule \"not a schedule\" for 1h)\n"},
		{name: "overlapping occurrences chain", np: pool(scheduled("1", "0 */2 * * *", "3h")), from: "Mon 2026-12-07 00:00", to: "Mon 2026-12-07 06:00",
			want: "Mon 00:00–Mon 06:00 1 nodes=1 (schedule \"0 */2 * * *\" for 3h)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Timeline(c.np, 500, at(c.from), at(c.to))
			if s := spans(got); s != c.want {
				t.Fatalf("timeline:\n%s\nwant:\n%s", s, c.want)
			}
			for _, s := range got {
				for _, probe := range []time.Time{s.Start, s.End.Add(-time.Minute)} {
					if a := Of(c.np, 500, probe); a.Allowed != s.Allowed && !strings.Contains(c.name, "too frequent") {
						t.Errorf("at %s Of allows %d, the span %d", probe, a.Allowed, s.Allowed)
					}
				}
			}
		})
	}
}

func TestShortDurations(t *testing.T) {
	for d, want := range map[time.Duration]string{8 * time.Hour: "8h", 90 * time.Minute: "1h30m", 30 * time.Minute: "30m", 30 * time.Second: "30s", 10 * time.Second: "10s", time.Hour + time.Second: "1h0m1s"} {
		if got := short(d); got != want {
			t.Errorf("short(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, c := range []struct {
		b    karpv1.Budget
		want string
	}{
		{karpv1.Budget{Nodes: "10%"}, ""},
		{scheduled("0", "@daily", "1h"), ""},
		{karpv1.Budget{Nodes: "ten"}, `nodes "ten"`},
		{scheduled("1", "every day", "1h"), `schedule "every day"`},
	} {
		err := Check(c.b)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Check(%s) = %v, want %q", Describe(&c.b), err, c.want)
		}
	}
}
