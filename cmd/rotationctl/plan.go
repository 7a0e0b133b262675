package main

import (
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/noderotation/node-rotation-controller/internal/plan"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

type planFlags struct {
	policyFile, policyName, nodePoolFile string
	expireAfter, tgp, now, output        string
	nodes, burst                         int
}

func planCommand() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan -f policy.yaml [--nodepool nodepool.yaml] [--expire-after D --tgp D] [--nodes N] [--now T] [-o table|json|yaml]",
		Short: "Derive a RotationPolicy's schedule figures and findings for a NodePool",
		Long: `plan reads a RotationPolicy and a Karpenter NodePool (expireAfter and
terminationGracePeriod from its template; --expire-after and --tgp stand in or
override) and prints P, D, gap, t_rot, t_rot_est, A, G, C, the next three
occurrences in the window's own time zone, and every finding with its
severity and remedy. Durations accept a day unit: 14d, 5d12h, 336h.

Exit status: 0 feasible, 1 a fatal finding, 2 unusable input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.policyFile, "file", "f", "", "RotationPolicy YAML file (required)")
	fl.StringVar(&f.policyName, "policy", "", "the policy to plan when the file holds several")
	fl.StringVar(&f.nodePoolFile, "nodepool", "", "Karpenter NodePool YAML file")
	fl.StringVar(&f.expireAfter, "expire-after", "", "expireAfter (E), e.g. 14d or Never; overrides the NodePool's")
	fl.StringVar(&f.tgp, "tgp", "", "terminationGracePeriod, e.g. 1h; overrides the NodePool's")
	fl.IntVar(&f.nodes, "nodes", 0, "number of nodes in the pool, for the layer-2 throughput findings")
	fl.IntVar(&f.burst, "burst", -1, "nodes sharing one deadline (default: --nodes, the worst case)")
	fl.StringVar(&f.now, "now", "", "evaluate as of this RFC3339 time (default: now)")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: "+strings.Join(plan.Formats, ", "))
	return cmd
}

func runPlan(cmd *cobra.Command, f planFlags) error {
	in, err := planInput(f)
	if err != nil {
		return err
	}
	report, err := plan.Build(in)
	if err != nil {
		return badInput("%s: %s", f.policyFile, oneLine(err))
	}
	if err := plan.Render(cmd.OutOrStdout(), report, f.output); err != nil {
		return badInput("%v", err)
	}
	if report.Fatal {
		return exitError{code: exitFatal, err: errors.New("")}
	}
	return nil
}

func planInput(f planFlags) (plan.Input, error) {
	var in plan.Input
	if f.policyFile == "" {
		return in, badInput("-f policy.yaml is required")
	}
	if !validFormat(f.output) {
		return in, badInput("-o %q: want one of %s", f.output, strings.Join(plan.Formats, ", "))
	}
	p, err := plan.LoadPolicy(f.policyFile, f.policyName)
	if err != nil {
		return in, badInput("%v", err)
	}
	in.Policy = p
	in.Now = time.Now()
	if f.now != "" {
		if in.Now, err = time.Parse(time.RFC3339, f.now); err != nil {
			return in, badInput("--now %q: want an RFC3339 time such as 2026-12-01T00:00:00Z", f.now)
		}
	}
	if f.nodePoolFile != "" {
		pool, err := plan.LoadNodePool(f.nodePoolFile)
		if err != nil {
			return in, badInput("%v", err)
		}
		in.NodePool, in.ExpireAfter, in.TerminationGrace = pool.Name, pool.ExpireAfter, pool.TerminationGrace
	}
	if f.expireAfter != "" {
		if in.ExpireAfter, err = durationFlag("--expire-after", f.expireAfter, true); err != nil {
			return in, err
		}
	}
	if f.tgp != "" {
		if in.TerminationGrace, err = durationFlag("--tgp", f.tgp, false); err != nil {
			return in, err
		}
	}
	if f.nodePoolFile == "" && f.expireAfter == "" {
		return in, badInput("expireAfter is unknown: give --nodepool nodepool.yaml or --expire-after D")
	}
	if f.nodes < 0 {
		return in, badInput("--nodes %d: must not be negative", f.nodes)
	}
	in.Population = schedule.Population{Nodes: f.nodes, Burst: f.nodes}
	if f.burst >= 0 {
		in.Population.Burst = f.burst
	}
	return in, nil
}

func durationFlag(name, v string, allowNever bool) (*time.Duration, error) {
	if allowNever && v == "Never" {
		return nil, nil
	}
	d, err := plan.ParseDuration(v)
	if err != nil || d <= 0 {
		return nil, badInput("%s %q: want a positive duration such as 14d or 1h30m", name, v)
	}
	return &d, nil
}

func validFormat(f string) bool {
	for _, v := range plan.Formats {
		if f == v {
			return true
		}
	}
	return false
}

// oneLine folds joined errors into a single line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
