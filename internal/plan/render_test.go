package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	sigsyaml "sigs.k8s.io/yaml"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// docsTable is the figure block docs/policy.md shows for the worked example.
const docsTable = `RotationPolicy api (expireAfter 14d, terminationGracePeriod 1h)

  P          largest gap between occurrence starts  4d
  D          shortest occurrence                    4h
  gap        shortest closed interval               2d20h
  t_rot      readyTimeout + tGP + buffer            1h17m
  t_rot_est  provisioningEstimate + drainEstimate   15m
  A          age threshold (auto)                   5d22h43m
  G          guaranteed rotation chances            2
  N          rotations at once                      1 (maxUnavailable 1)
  C          starts per occurrence                  10
`

func render(t *testing.T, r Report, format string) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, r, format); err != nil {
		t.Fatalf("Render(%q): %v", format, err)
	}
	return b.String()
}

func TestRenderTableWorkedExample(t *testing.T) {
	in := workedInput(t)
	in.NodePool = "" // the docs plan without a NodePool file
	r, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	want := docsTable + `
Next occurrences:
  Wed 2026-12-02 02:00 – 06:00 JST (Asia/Tokyo)
  Sat 2026-12-05 02:00 – 06:00 JST (Asia/Tokyo)
  Wed 2026-12-09 02:00 – 06:00 JST (Asia/Tokyo)

Coverage:
  give --nodes N to judge whether a pool of N nodes is covered

Findings:
  none
`
	for _, format := range []string{"table", ""} {
		if got := render(t, r, format); got != want {
			t.Errorf("format %q:\n%s\nwant:\n%s", format, got, want)
		}
	}
}

func TestRenderTableVariants(t *testing.T) {
	r := Report{
		Policy: "always", NodePool: "batch", ExpireAfter: "Never", TerminationGracePeriod: "unset",
		AlwaysOpen: true, P: "1m", D: "7d", Gap: "none", TRot: "1h17m", TRotEst: "15m", A: "0s", AgeThreshold: "auto",
		Findings: []schedule.Finding{
			{Layer: 1, Reason: "NoWindows", Severity: schedule.Fatal, Message: "msg one", Remedy: "fix one"},
			{Layer: 2, Reason: "TGPUnset", Severity: schedule.Warning, Message: "msg two", Remedy: "fix two"},
		},
	}
	out := render(t, r, "table")
	pad := strings.Repeat(" ", len("  Warning  ")+len("NoWindows  ")+len("layer 1  "))
	for _, want := range []string{
		"RotationPolicy always for NodePool batch (expireAfter Never, terminationGracePeriod unset)\n",
		"  P          largest gap between occurrence starts  1m (open 24/7: the reconcile tick)\n",
		"Next occurrences:\n  none\n",
		"Findings:\n  Fatal    NoWindows  layer 1  msg one\n" + pad + "remedy: fix one\n",
		"  Warning  TGPUnset   layer 2  msg two\n" + pad + "remedy: fix two\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Findings:\n  none") {
		t.Errorf("a report with findings says none:\n%s", out)
	}
}

func TestRenderOccurrenceAcrossMidnight(t *testing.T) {
	in := Input{Policy: v1alpha1.RotationPolicy{Spec: v1alpha1.RotationPolicySpec{MaintenanceWindows: []v1alpha1.MaintenanceWindow{
		win("UTC", []v1alpha1.Weekday{"Fri"}, "22:00", "04:00"),
		win("Europe/Berlin", []v1alpha1.Weekday{"Mon"}, "06:00", "06:00"),
	}}}, ExpireAfter: dptr(30 * 24 * time.Hour), Now: mon}
	in.Policy.Name = "nights"
	r, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	tableHas(t, render(t, r, "table"),
		"  Fri 2026-12-04 22:00 – Sat 2026-12-05 04:00 UTC (UTC)\n",
		"  Mon 2026-12-07 06:00 – Tue 2026-12-08 06:00 CET (Europe/Berlin)\n",
	)
}

// tableHas fails t for each line the rendered table lacks.
func tableHas(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, want := range lines {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestRenderJSON(t *testing.T) {
	r, err := Build(workedInput(t))
	if err != nil {
		t.Fatal(err)
	}
	out := render(t, r, "json")
	for _, want := range []string{
		"{\n  \"policy\": \"api\",\n  \"nodePool\": \"api\",\n",
		`  "tRot": "1h17m",`,
		`  "ageThreshold": "auto",`,
		`      "start": "2026-12-02T02:00:00+09:00",`,
		`      "timezone": "Asia/Tokyo"`,
		`  "fatal": false`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("json lacks %q:\n%s", want, out)
		}
	}
	var back Report
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatal(err)
	}
	if back.A != "5d22h43m" || back.G != 2 || back.C != 10 || len(back.NextOccurrences) != 3 || !back.NextOccurrences[0].Start.Equal(r.NextOccurrences[0].Start) {
		t.Errorf("decoded = %+v", back)
	}
	// A pool-less report leaves nodePool out.
	r.NodePool = ""
	if out := render(t, r, "json"); strings.Contains(out, "nodePool") {
		t.Errorf("empty nodePool rendered:\n%s", out)
	}
}

func TestRenderYAML(t *testing.T) {
	in := workedInput(t)
	in.TerminationGrace = nil
	r, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	out := render(t, r, "yaml")
	for _, want := range []string{"\nA: 5d22h43m\n", "\nterminationGracePeriod: unset\n", "\n  reason: TGPUnset\n", "\n  severity: Info\n", "\nfatal: false\n"} {
		if !strings.Contains("\n"+out, want) {
			t.Errorf("yaml lacks %q:\n%s", want, out)
		}
	}
	var back Report
	if err := sigsyaml.Unmarshal([]byte(out), &back); err != nil {
		t.Fatal(err)
	}
	if back.TRot != r.TRot || len(back.Findings) != 1 || back.Findings[0].Layer != 1 || back.Findings[0].Remedy != r.Findings[0].Remedy {
		t.Errorf("decoded = %+v", back)
	}
}

func TestRenderUnknownFormat(t *testing.T) {
	var b bytes.Buffer
	err := Render(&b, Report{}, "xml")
	if err == nil || err.Error() != `unknown output format "xml" (want table, json or yaml)` || b.Len() != 0 {
		t.Errorf("error = %v, output %q", err, b.String())
	}
	for _, f := range Formats {
		if err := Render(&bytes.Buffer{}, Report{}, f); err != nil {
			t.Errorf("listed format %q fails: %v", f, err)
		}
	}
}

type failingWriter struct{}

var errWrite = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestRenderReportsWriteErrors(t *testing.T) {
	for _, f := range Formats {
		if err := Render(failingWriter{}, Report{Policy: "p"}, f); !errors.Is(err, errWrite) {
			t.Errorf("format %s: error = %v, want the writer's", f, err)
		}
	}
}

// With surge.startCutoff set the plan shows the start hold after t_rot_est
// and C counts only the starts before it (docs/design.md#window-end).
func TestRenderStartHold(t *testing.T) {
	in := workedInput(t)
	in.NodePool = ""
	in.Policy.Spec.Surge.StartCutoff = "0s"
	r, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	// D 4h less the 15m hold, a start every 25m: ceil(225m / 25m) = 9
	if r.StartHold != "15m" || r.C != 9 {
		t.Errorf("start hold %q, C %d; want 15m and 9", r.StartHold, r.C)
	}
	out := render(t, r, "table")
	est, hold := strings.Index(out, "  t_rot_est "), strings.Index(out, "  start hold  t_rot_est − startCutoff: no start this close to the close  15m\n")
	if est < 0 || hold < est || strings.Index(out, "  A ") < hold {
		t.Errorf("table:\n%s", out)
	}
}

// The blackouts not yet over are listed; past ones are not.
func TestRenderBlackouts(t *testing.T) {
	in := workedInput(t)
	in.NodePool = ""
	in.Policy.Spec.Blackouts = []v1alpha1.Blackout{
		{Start: "2026-01-01T00:00:00Z", End: "2026-01-02T00:00:00Z", Reason: "past"},
		{Start: "2026-12-24T00:00:00Z", End: "2026-12-27T00:00:00Z", Reason: "holidays"},
	}
	r, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	out := render(t, r, "table")
	if !strings.Contains(out, "Blackouts (no rotation starts):\n  2026-12-24T00:00:00Z – 2026-12-27T00:00:00Z  holidays\n") || strings.Contains(out, "past") {
		t.Errorf("table:\n%s", out)
	}
}

// With prePull on, t_rot and t_rot_est name the phase's bound they include
// (docs/design.md#pre-pull); with it off (the worked example) they do not.
func TestRenderPrePullBound(t *testing.T) {
	in := workedInput(t)
	in.NodePool = ""
	r, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.PrePullTimeout != "" {
		t.Fatalf("prePull off, the report says %q", r.PrePullTimeout)
	}
	r.PrePullTimeout, r.TRot, r.TRotEst = "10m", "1h27m", "25m"
	tableHas(t, render(t, r, "table"),
		"  t_rot      readyTimeout + prePull.timeout + tGP + buffer           1h27m\n",
		"  t_rot_est  provisioningEstimate + prePull.timeout + drainEstimate  25m\n",
	)
}
