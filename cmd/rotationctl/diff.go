package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

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
				return writeDiff(cmd.OutOrStdout(), baseSrc, headSrc, base.Version(), head.Version(), d)
			}
			return badInput("-o %q: want markdown or json", output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "markdown", "markdown (for a pull request) or json")
	return cmd
}

// diffGroup is the differences that share a state and a pair of choices.
type diffGroup struct {
	key   string
	base  *engine.Choice
	head  *engine.Choice
	facts [][]engine.FactValue
}

func writeDiff(w io.Writer, baseSrc, headSrc string, bv, hv int, d []engine.Difference) error {
	var groups []*diffGroup
	byKey := map[string]*diffGroup{}
	for _, x := range d {
		key := fmt.Sprintf("%s/%s: %s → %s", x.Machine, x.State, choiceName(x.Base), choiceName(x.Head))
		if x.Base != nil && x.Head != nil && x.Base.Transition == x.Head.Transition {
			key = fmt.Sprintf("%s/%s: %s, its target or steps changed", x.Machine, x.State, x.Base.Transition)
		}
		g := byKey[key]
		if g == nil {
			g = &diffGroup{key: key, base: x.Base, head: x.Head}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.facts = append(g.facts, x.Facts)
	}
	p := &printer{w: w}
	p.f("### rules diff: %s (version %d) → %s (version %d)\n\n", baseSrc, bv, headSrc, hv)
	if len(d) == 0 {
		p.f("No difference: the two tables choose the same transition, target and steps on every combination.\n")
		return p.err
	}
	p.f("%d combinations decide differently, in %d groups.\n", len(d), len(groups))
	for _, g := range groups {
		p.f("\n#### %s (%d)\n\n", g.key, len(g.facts))
		if g.base != nil && g.head != nil && g.base.Transition == g.head.Transition {
			p.f("- base: to %s, steps %s\n- head: to %s, steps %s\n\n", g.base.To, steps(g.base.Steps), g.head.To, steps(g.head.Steps))
		}
		for _, fs := range g.facts {
			parts := make([]string, len(fs))
			for i, f := range fs {
				parts[i] = fmt.Sprintf("%s=%v", f.Name, f.Value)
			}
			p.f("- `%s`\n", strings.Join(parts, " "))
		}
	}
	return p.err
}

func choiceName(c *engine.Choice) string {
	if c == nil {
		return "(none)"
	}
	return c.Transition
}

func steps(s []engine.Step) string {
	parts := make([]string, len(s))
	for i, st := range s {
		parts[i] = st.Action
		if st.Elect {
			parts[i] += "(elect)"
		}
		if len(st.Args) > 0 {
			b, _ := json.Marshal(st.Args)
			parts[i] += string(b)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// printer writes until the first error, which it keeps.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
