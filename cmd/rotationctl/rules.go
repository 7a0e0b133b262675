package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/table"
	"github.com/noderotation/node-rotation-controller/rules"
)

const shippedTable = "rules/rotation.yaml"

func rulesCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Lint, render, expand and diff the rotation transition table",
	}
	var out string
	render := &cobra.Command{
		Use:   "render [file]",
		Short: "Render the table as Markdown with a Mermaid state diagram",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, source, err := loadRules(args)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if out != "" {
				f, err := os.Create(out)
				if err != nil {
					return badInput("-o %s: %v", out, err)
				}
				defer f.Close()
				w = f
			}
			return e.RenderMarkdown(w, source)
		},
	}
	render.Flags().StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	cmd.AddCommand(
		rulesDiffCommand(),
		&cobra.Command{
			Use:   "lint [file]",
			Short: "Load and prove a table: complete, deterministic, no dead row, known actions",
			Args:  cobra.MaximumNArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				e, source, err := loadRules(args)
				if err != nil {
					return err
				}
				s := e.Stats()
				fmt.Fprintf(cmd.OutOrStdout(), "%s: table version %d is complete, deterministic and live: %d transitions, %d states in %d machines, %d fact combinations proven\n",
					source, e.Version(), s.Transitions, s.States, s.Machines, s.Combinations)
				return nil
			},
		},
		render,
		expandCommand(),
	)
	return cmd
}

// expandCommand lists the fact space, every combination or, with
// --compact, a line per block that takes one transition.
func expandCommand() *cobra.Command {
	var compact bool
	cmd := &cobra.Command{
		Use:   "expand [file]",
		Short: "List the whole enumerated fact space: every combination and the transition it takes",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, _, err := loadRules(args)
			if err != nil {
				return err
			}
			if compact {
				return e.ExpandCompact(cmd.OutOrStdout())
			}
			return e.Expand(cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&compact, "compact", false, "one line per block of combinations that takes one transition whatever its later facts (written *) are")
	return cmd
}

// loadRules loads the table at args[0], or the shipped one. A table that
// does not prove exits 1 with the engine's message; an unreadable file, 2.
func loadRules(args []string) (*engine.Engine, string, error) {
	data, source := rules.Table, shippedTable
	if len(args) == 1 {
		var err error
		if data, err = os.ReadFile(args[0]); err != nil {
			return nil, "", badInput("%v", err)
		}
		source = args[0]
	}
	e, err := table.LoadTable(data)
	if err != nil {
		return nil, "", exitError{code: exitFatal, err: fmt.Errorf("%s: %w", source, err)}
	}
	return e, source, nil
}
