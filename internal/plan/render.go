package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// Formats lists the -o values Render accepts.
var Formats = []string{"table", "json", "yaml"}

// Render writes r in format (table, json or yaml).
func Render(w io.Writer, r Report, format string) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "yaml":
		b, err := yaml.Marshal(r)
		if err != nil {
			return fmt.Errorf("rendering yaml: %w", err)
		}
		_, err = w.Write(b)
		return err
	case "table", "":
		return renderTable(w, r)
	}
	return fmt.Errorf("unknown output format %q (want table, json or yaml)", format)
}

func renderTable(w io.Writer, r Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	target := r.Policy
	if r.NodePool != "" {
		target += " for NodePool " + r.NodePool
	}
	fmt.Fprintf(tw, "RotationPolicy %s (expireAfter %s, terminationGracePeriod %s)\n\n", target, r.ExpireAfter, r.TerminationGracePeriod)
	period := r.P
	if r.AlwaysOpen {
		period += " (open 24/7: the reconcile tick)"
	}
	prePull := ""
	if r.PrePullTimeout != "" {
		prePull = " + prePull.timeout"
	}
	rows := [][2]string{
		{"P\tlargest gap between occurrence starts", period},
		{"D\tshortest occurrence", r.D},
		{"gap\tshortest closed interval", r.Gap},
		{"t_rot\treadyTimeout" + prePull + " + tGP + buffer", r.TRot},
		{"t_rot_est\tprovisioningEstimate" + prePull + " + drainEstimate", r.TRotEst},
		{"A\tage threshold (" + r.AgeThreshold + ")", r.A},
		{"G\tguaranteed rotation chances", fmt.Sprint(r.G)},
		{"N\trotations at once", nLine(r)},
		{"C\tstarts per occurrence", fmt.Sprint(r.C)},
	}
	if r.StartHold != "" {
		rows = append(rows[:5:5], append([][2]string{{"start hold\tt_rot_est − startCutoff: no start this close to the close", r.StartHold}}, rows[5:]...)...)
	}
	for _, row := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", row[0], row[1])
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "Next occurrences:")
	if len(r.NextOccurrences) == 0 {
		fmt.Fprintln(tw, "  none")
	}
	for _, o := range r.NextOccurrences {
		fmt.Fprintf(tw, "  %s\n", schedule.FormatOccurrence(o.Start, o.End, o.Start.Location()))
	}
	if len(r.Blackouts) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "Blackouts (no rotation starts):")
		for _, b := range r.Blackouts {
			line := "  " + b.Start + " – " + b.End
			if b.Reason != "" {
				line += "  " + b.Reason
			}
			fmt.Fprintln(tw, line)
		}
	}
	if len(r.Budgets) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "NodePool disruption budgets (the strictest in force bounds the starts):")
		for _, b := range r.Budgets {
			fmt.Fprintf(tw, "  %s\n", b)
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "Coverage:")
	fmt.Fprintf(tw, "  %s\n", coverageLine(r.Coverage))
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "Findings:")
	if len(r.Findings) == 0 {
		fmt.Fprintln(tw, "  none")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(tw, "  %s\t%s\tlayer %d\t%s\n  \t\t\tremedy: %s\n", f.Severity, f.Reason, f.Layer, f.Message, f.Remedy)
	}
	return tw.Flush()
}

// nLine is the number in force and why, and — when the NodePool's budget
// allows fewer in the windows — the number the coverage is judged at.
func nLine(r Report) string {
	s := fmt.Sprintf("%d (%s)", r.InForce.N, r.InForce.Why)
	if c := r.Coverage; c.HeldBy != "" {
		s += fmt.Sprintf("; NodePool budget %s allows %d in the windows, and the coverage is judged at %d", c.HeldBy, c.InForce, c.InForce)
	}
	return s
}

func coverageLine(c schedule.Coverage) string {
	if !c.Applies && c.Nodes == 0 {
		return "give --nodes N to judge whether a pool of N nodes is covered"
	}
	return c.Sentence()
}
