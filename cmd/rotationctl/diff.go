package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/noderotation/node-rotation-controller/engine"
)

// rulesDiffCommand compares two tables combination by combination: what a
// pull request's table change does, in a form to paste into its review.
func rulesDiffCommand() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "diff BASE.yaml HEAD.yaml",
		Short: "List every fact combination on which two tables choose a different transition, target or steps, grouped by transition",
		Long: `Enumerates, for every machine and state of either table, every assignment of the
facts either table's guards read there, and lists those on which BASE and HEAD
choose a different transition, target or steps — grouped by (state, base
transition → head transition). Both tables must load and prove. Empty output
means the two decide alike everywhere.`,
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
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(d)
			case "markdown":
				return engine.RenderDiff(cmd.OutOrStdout(), baseSrc, headSrc, base.Version(), head.Version(), d)
			}
			return badInput("-o %q: want markdown or json", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "markdown", "markdown (for a pull request) or json")
	return cmd
}
