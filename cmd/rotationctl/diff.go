package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/simulate"
)

// rulesDiffCommand compares two tables combination by combination: what a
// pull request's table change does, in a form to paste into its review.
func rulesDiffCommand() *cobra.Command {
	var output string
	var sim simulateFlags
	cmd := &cobra.Command{
		Use:   "diff BASE.yaml HEAD.yaml [--simulate fleet.yaml -f policy.yaml]",
		Short: "List every fact combination on which two tables choose a different transition, target, steps, requeue or onLost, grouped by transition",
		Long: `Enumerates, for every machine and state of either table, every assignment of the
facts either table's guards read there, and lists those on which BASE and HEAD
choose a different transition, target, steps, requeue or onLost — grouped by
(state, base transition → head transition). Both tables must load and prove.
It also names the facts the two define differently (expression, values, Go
observer, changesAt): such a change moves which observations take which value,
which no combination shows. No difference listed and no fact named means the
two decide alike everywhere. When they do not and both carry the same
version, it warns: every behaviour change bumps the version.

With --simulate fleet.yaml and -f policy.yaml, it also simulates the fleet
under each table (see rotationctl simulate) and prints both summaries side
by side: what the change does to rotations, force-expiries and margins.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			base, baseSrc, err := loadRules(args[:1])
			if err != nil {
				return err
			}
			head, headSrc, err := loadRules(args[1:])
			if err != nil {
				return err
			}
			d := engine.Diff(base, head)
			switch output {
			case "json":
				if sim.fleetFile != "" {
					return badInput("--simulate prints Markdown: drop -o json")
				}
				if base.Version() == head.Version() && (len(d) > 0 || len(engine.DefinitionChanges(base, head)) > 0) {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: the two tables behave differently but carry the same version %d: bump version in %s\n", head.Version(), headSrc)
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(d)
			case "markdown":
				if err := engine.RenderDiff(cmd.OutOrStdout(), baseSrc, headSrc, base, head, d); err != nil {
					return err
				}
				if sim.fleetFile == "" {
					return nil
				}
				return simulateBoth(cmd, sim, baseSrc, headSrc, base, head)
			}
			return badInput("-o %q: want markdown or json", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "markdown", "markdown (for a pull request) or json")
	cmd.Flags().StringVar(&sim.fleetFile, "simulate", "", "also simulate this fleet file under both tables and compare the summaries")
	cmd.Flags().StringArrayVarP(&sim.policyFiles, "file", "f", nil, "RotationPolicy file for --simulate; repeat for several")
	cmd.Flags().Uint64Var(&sim.seed, "seed", 1, "seed of the simulations' random draws")
	cmd.Flags().StringVar(&sim.span, "span", "", "how long to simulate (default: the fleet file's, else 4w)")
	return cmd
}

// simulateBoth runs the fleet under each table with the same seed and
// prints the two summaries side by side.
func simulateBoth(cmd *cobra.Command, f simulateFlags, baseSrc, headSrc string, base, head *engine.Engine) error {
	in, err := simulateInput(f)
	if err != nil {
		return err
	}
	results := make([]*simulate.Result, 2)
	for i, eng := range []*engine.Engine{base, head} {
		in.Engine = eng
		if results[i], err = simulate.Run(cmd.Context(), in); err != nil {
			return fmt.Errorf("simulating under %s: %w", []string{baseSrc, headSrc}[i], err)
		}
	}
	fmt.Fprintln(cmd.OutOrStdout())
	return simulate.RenderComparison(cmd.OutOrStdout(), baseSrc, headSrc, results[0], results[1])
}
