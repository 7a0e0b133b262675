package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/noderotation/node-rotation-controller/internal/plan"
	"github.com/noderotation/node-rotation-controller/internal/simulate"
)

type simulateFlags struct {
	policyFiles                    []string
	fleetFile, report, start, span string
	seed                           uint64
	failOnExpiry                   bool
}

func simulateCommand() *cobra.Command {
	var f simulateFlags
	cmd := &cobra.Command{
		Use:   "simulate -f policy.yaml [-f more.yaml] --fleet fleet.yaml [--span 4w] [--seed N] [--report report.html] [--fail-on-expiry]",
		Short: "Run the controller's own reconciler on a simulated fleet over weeks, in seconds",
		Long: `simulate runs the real reconciler — observation, the shipped rules table,
the actions and the announcer — against an in-memory API server per NodePool,
a simulated Karpenter (launch, boot and drain times drawn from the fleet
file, optional launch failures and stuck drains, forceful expiry at
expireAfter) and a simulated clock. It prints, per pool, the rotations, the
margin between each rotation and the node's forced expiry, the nodes
Karpenter force-expired, the windows missed, the extra surge nodes and the
longest gate hold, and plan's schedule figures next to what the run did.
--report writes an HTML report with SVG plots. Runs with the same inputs and
seed are identical.

Exit status: 0, or 1 with --fail-on-expiry when a node was force-expired;
2 unusable input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSimulate(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&f.policyFiles, "file", "f", nil, "RotationPolicy YAML file (one or several policies); repeat for several files (required)")
	fl.StringVar(&f.fleetFile, "fleet", "", "fleet file: pools, node counts, expireAfter, ages, timings (required)")
	fl.StringVar(&f.span, "span", "", "how long to simulate, e.g. 4w or 10d (default: the fleet file's, else 4w)")
	fl.StringVar(&f.start, "start", "", "RFC3339 start (default: the fleet file's, else the next midnight UTC)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of every random draw")
	fl.StringVar(&f.report, "report", "", "write the HTML report to this file")
	fl.BoolVar(&f.failOnExpiry, "fail-on-expiry", false, "exit 1 when any node was force-expired (for CI)")
	return cmd
}

func runSimulate(cmd *cobra.Command, f simulateFlags) error {
	in, err := simulateInput(f)
	if err != nil {
		return err
	}
	res, err := simulate.Run(cmd.Context(), in)
	if err != nil {
		return fmt.Errorf("simulating: %w", err)
	}
	if err := simulate.RenderSummary(cmd.OutOrStdout(), res); err != nil {
		return err
	}
	if f.report != "" {
		if err := writeReport(f.report, res); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "\nreport: %s\n", f.report)
	}
	if f.failOnExpiry && res.Total.ForceExpired > 0 {
		return exitError{code: exitFatal, err: fmt.Errorf("%d node(s) force-expired by Karpenter before their rotation", res.Total.ForceExpired)}
	}
	return nil
}

func simulateInput(f simulateFlags) (simulate.Input, error) {
	in := simulate.Input{Seed: f.seed}
	if len(f.policyFiles) == 0 || f.fleetFile == "" {
		return in, badInput("-f policy.yaml and --fleet fleet.yaml are required")
	}
	for _, file := range f.policyFiles {
		pols, err := plan.LoadPolicies(file)
		if err != nil {
			return in, badInput("%v", err)
		}
		if len(pols) == 0 {
			return in, badInput("%s: no RotationPolicy in the file", file)
		}
		in.Policies = append(in.Policies, pols...)
	}
	var err error
	if in.Fleet, err = simulate.LoadFleet(f.fleetFile); err != nil {
		return in, badInput("%v", err)
	}
	if f.span != "" {
		var d simulate.Duration
		if err := d.UnmarshalJSON([]byte(`"` + f.span + `"`)); err != nil || d.Duration <= 0 {
			return in, badInput("--span %q: want a positive duration such as 4w or 10d", f.span)
		}
		in.Fleet.Span = d
	}
	if f.start != "" {
		if in.Fleet.Start, err = time.Parse(time.RFC3339, f.start); err != nil {
			return in, badInput("--start %q: want an RFC3339 time such as 2026-12-01T00:00:00Z", f.start)
		}
	}
	if in.Fleet.Start.IsZero() {
		in.Fleet.Start = time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	}
	return in, nil
}

func writeReport(path string, res *simulate.Result) (err error) {
	out, err := os.Create(path)
	if err != nil {
		return badInput("--report: %v", errors.Unwrap(err))
	}
	defer func() {
		if cerr := out.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("writing %s: %w", path, cerr)
		}
	}()
	if err := simulate.RenderReport(out, res); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
