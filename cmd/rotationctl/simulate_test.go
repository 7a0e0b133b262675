package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSimulateFailsOnExpiryOnlyWhenAsked(t *testing.T) {
	args := []string{"simulate", "-f", "testdata/sunday-hour.yaml", "--fleet", "testdata/fleet-small.yaml"}
	code, out, errOut := runCLI(args...)
	if code != 0 || forceExpired(t, out) == 0 {
		t.Fatalf("without --fail-on-expiry: exit %d, stderr %s\n%s", code, errOut, out)
	}
	code, _, errOut = runCLI(append(args, "--fail-on-expiry")...)
	if code != exitFatal || !strings.Contains(errOut, "force-expired by Karpenter") {
		t.Fatalf("with --fail-on-expiry: exit %d, stderr %s; want %d", code, errOut, exitFatal)
	}
}

func TestSimulateFeasiblePassesAndWritesTheReport(t *testing.T) {
	report := filepath.Join(t.TempDir(), "report.html")
	code, out, errOut := runCLI("simulate", "-f", example, "--fleet", "testdata/fleet-small.yaml", "--span", "4d", "--expire-after-unused", "x")
	if code != exitBadInput {
		t.Fatalf("an unknown flag: exit %d, want %d (%s%s)", code, exitBadInput, out, errOut)
	}
	code, out, errOut = runCLI("simulate", "-f", example, "--fleet", "testdata/fleet-api.yaml", "--report", report, "--fail-on-expiry", "--seed", "3")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "seed 3") {
		t.Errorf("summary does not name the seed:\n%s", out)
	}
	html, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(html), `<svg class="lanes"`) {
		t.Fatalf("report: %v", err)
	}
}

func TestSimulateRejectsBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "--fleet", "testdata/fleet-small.yaml"},
		{"simulate", "-f", example},
		{"simulate", "-f", example, "--fleet", "testdata/fleet-small.yaml", "--span", "soon"},
		{"simulate", "-f", example, "--fleet", "testdata/nodepool.yaml"},
	} {
		if code, _, _ := runCLI(args...); code != exitBadInput {
			t.Errorf("%v: exit %d, want %d", args, code, exitBadInput)
		}
	}
}

// forceExpired reads the FORCE-EXPIRED cell of the summary's TOTAL row.
func forceExpired(t *testing.T, out string) int {
	t.Helper()
	var header, total []string
	for _, line := range strings.Split(out, "\n") {
		switch f := strings.Fields(line); {
		case len(f) > 0 && f[0] == "NODEPOOL" && header == nil:
			header = strings.Fields(strings.ReplaceAll(line, "MARGIN MIN/MEDIAN", "MARGIN"))
		case len(f) > 0 && f[0] == "TOTAL":
			total = f
		}
	}
	i := slices.Index(header, "FORCE-EXPIRED")
	// TOTAL has no POLICY cell: one field fewer before the counts.
	if i < 1 || len(total) < i {
		t.Fatalf("no FORCE-EXPIRED in the summary:\n%s", out)
	}
	n, err := strconv.Atoi(total[i-1])
	if err != nil {
		t.Fatalf("FORCE-EXPIRED cell %q: %v", total[i-1], err)
	}
	return n
}
