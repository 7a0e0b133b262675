package simulate

import (
	"fmt"
	"io"
	"strings"

	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// RenderComparison writes, as a Markdown table, the summaries of two runs
// of one fleet side by side (rotationctl rules diff --simulate): per pool
// and in total, each figure as "base → head", in bold where they differ.
func RenderComparison(w io.Writer, baseName, headName string, base, head *Result) error {
	fmt.Fprintf(w, "### Simulation: %s → %s\n\n", baseName, headName)
	fmt.Fprintf(w, "%s → %s, seed %d, rules version %d → %d.\n\n", base.Start.UTC().Format("2006-01-02 15:04 MST"),
		base.End.UTC().Format("2006-01-02 15:04 MST"), base.Seed, base.RulesVersion, head.RulesVersion)
	fmt.Fprintln(w, "| NodePool | rotated | starts | failed | force-expired | margin min | margin median | windows missed | extra surge | longest hold |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	changed := false
	row := func(name string, b, h []string) {
		cells := make([]string, len(b))
		for i := range b {
			cells[i] = b[i]
			if b[i] != h[i] {
				cells[i] = "**" + b[i] + " → " + h[i] + "**"
				changed = true
			}
		}
		fmt.Fprintf(w, "| %s | %s |\n", name, strings.Join(cells, " | "))
	}
	for i, bp := range base.Pools {
		if i >= len(head.Pools) {
			break
		}
		row(bp.Summary.Pool, poolCells(bp.Summary), poolCells(head.Pools[i].Summary))
	}
	row("total", totalCells(base.Total), totalCells(head.Total))
	if !changed {
		fmt.Fprintln(w, "\nBoth tables rotate this fleet alike.")
	}
	return nil
}

func poolCells(s PoolSummary) []string {
	margin, median := "-", "-"
	if s.Rotations > 0 {
		margin, median = schedule.Approx(s.MarginMin), schedule.Approx(s.MarginMedian)
	}
	return []string{fmt.Sprint(s.Rotations), fmt.Sprint(s.Attempts), fmt.Sprint(s.RotationFailures), fmt.Sprint(s.ForceExpired), margin, median,
		fmt.Sprint(s.WindowsMissed), fmt.Sprint(s.ExtraSurge), schedule.Approx(s.LongestHold)}
}

func totalCells(t Totals) []string {
	margin := "-"
	if t.HasMargin {
		margin = schedule.Approx(t.MarginMin)
	}
	return []string{fmt.Sprint(t.Rotations), fmt.Sprint(t.Attempts), fmt.Sprint(t.RotationFailures), fmt.Sprint(t.ForceExpired), margin, "-",
		fmt.Sprint(t.WindowsMissed), fmt.Sprint(t.ExtraSurge), schedule.Approx(t.LongestHold)}
}
