package main

import (
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/noderotation/node-rotation-controller/internal/inspect"
	"github.com/noderotation/node-rotation-controller/internal/plan"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

type planFlags struct {
	kube                                 kubeFlags
	policyFile, policyName, nodePoolFile string
	expireAfter, tgp, now, output        string
	failOn                               string
	nodes, burst                         int
	eksAutoMode                          bool
}

func planCommand() *cobra.Command {
	var f planFlags
	cmd := &cobra.Command{
		Use:   "plan [-f policy.yaml [--nodepool nodepool.yaml] [--expire-after D --tgp D] [--nodes N [--burst B]] [--now T]] [--fail-on fatal|warning] [-o table|json|yaml]",
		Short: "Derive a RotationPolicy's schedule figures, findings and coverage for a NodePool; with no -f, judge every governed pool of the cluster",
		Long: `plan reads a RotationPolicy and a Karpenter NodePool (expireAfter and
terminationGracePeriod from its template; --expire-after and --tgp stand in or
override) and prints P, D, gap, t_rot, t_rot_est, A, G, C, the next three
occurrences in the window's own time zone, and every finding with its
severity and remedy, and — given --nodes — the coverage verdict: whether
every node of such a pool is rotated before its deadline, and if not the
smallest maxUnavailable, occurrence length or pool size that covers it.
Durations accept a day unit: 14d, 5d12h, 336h.

With no -f, plan reads the cluster of the current kubeconfig context, as
kubectl does: every RotationPolicy, the NodePools each governs and their
NodeClaims, and prints a row per governed pool — its nodes, the rotations
each occurrence must carry against those that fit at the maxUnavailable in
force, the verdict, and the claims the schedule would leave to Karpenter's
forced expiry in the next four weeks, from the claims' real ages.

The policy is first judged as the API server would judge it (the CRD's
schema, defaults and rules): what kubectl apply would refuse, plan refuses
with the same message.

Exit status: 0 nothing at or above --fail-on, 1 a finding at or above it
(fatal: a fatal finding; warning: any finding, or a pool not covered),
2 unusable input.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.policyFile, "file", "f", "", "RotationPolicy YAML file; none: the live cluster's policies and pools")
	fl.StringVar(&f.policyName, "policy", "", "the policy to plan when the file holds several")
	fl.StringVar(&f.nodePoolFile, "nodepool", "", "Karpenter NodePool YAML file")
	fl.StringVar(&f.expireAfter, "expire-after", "", "expireAfter (E), e.g. 14d or Never; overrides the NodePool's")
	fl.StringVar(&f.tgp, "tgp", "", "terminationGracePeriod, e.g. 1h; overrides the NodePool's")
	fl.IntVar(&f.nodes, "nodes", 0, "number of nodes in the pool, for the layer-2 throughput findings")
	fl.IntVar(&f.burst, "burst", -1, "nodes whose deadlines fall within one window period (default: a pool in steady state, N·P/A of them; --burst N is the worst case, every node created at once)")
	fl.BoolVar(&f.eksAutoMode, "eks-auto-mode", false, "hold the pool to EKS Auto Mode's 21-day node lifetime (implied by a --nodepool whose nodeClassRef is group eks.amazonaws.com)")
	fl.StringVar(&f.failOn, "fail-on", "fatal", "exit 1 on a finding of this severity or worse: fatal, or warning (any finding, or a pool not covered): for CI")
	fl.StringVar(&f.now, "now", "", "evaluate as of this RFC3339 time (default: now)")
	fl.StringVarP(&f.output, "output", "o", "table", "output format: "+strings.Join(plan.Formats, ", "))
	f.kube.add(cmd)
	return cmd
}

func runPlan(cmd *cobra.Command, f planFlags) error {
	if f.policyFile == "" {
		return runLivePlan(cmd, f)
	}
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
	if report.Fatal || (f.failOn == failOnWarning && (warned(report.Findings) || !report.Coverage.Covered)) {
		return exitError{code: exitFatal, err: errors.New("")}
	}
	return nil
}

// warned reports a Warning or Fatal finding: an Info one (true of a
// healthy pool with Karpenter's defaults) never fails the run.
func warned(fs []schedule.Finding) bool {
	for _, f := range fs {
		if f.Severity != schedule.Info {
			return true
		}
	}
	return false
}

// The values of --fail-on.
const (
	failOnFatal   = "fatal"
	failOnWarning = "warning"
)

func planInput(f planFlags) (plan.Input, error) {
	var in plan.Input
	if f.failOn != failOnFatal && f.failOn != failOnWarning {
		return in, badInput("--fail-on %q: want fatal or warning", f.failOn)
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
		in.NodePool, in.ExpireAfter, in.TerminationGrace, in.EKSAutoMode = pool.Name, pool.ExpireAfter, pool.TerminationGrace, pool.EKSAutoMode
		in.Budgets = pool.Budgets
	} else {
		// a pool given by flags has the budget Karpenter gives a NodePool
		in.Budgets = plan.DefaultBudgets()
	}
	in.EKSAutoMode = in.EKSAutoMode || f.eksAutoMode
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
	in.Population = schedule.Population{Nodes: f.nodes, Burst: f.burst} // negative: steady state (plan.Input)
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

// runLivePlan judges every pool a policy selects (inspect.Coverage): exit
// 1 when one is not rotated at all (a tie, an invalid policy, a malformed
// annotation, a fatal finding), or — with --fail-on warning — has a
// warning finding, is not covered or is forecast to lose a claim to
// Karpenter's expiry.
func runLivePlan(cmd *cobra.Command, f planFlags) error {
	if f.failOn != failOnFatal && f.failOn != failOnWarning {
		return badInput("--fail-on %q: want fatal or warning", f.failOn)
	}
	if !validFormat(f.output) {
		return badInput("-o %q: want one of %s", f.output, strings.Join(plan.Formats, ", "))
	}
	for _, name := range []string{"policy", "nodepool", "expire-after", "tgp", "nodes", "burst", "eks-auto-mode", "now"} {
		if cmd.Flags().Changed(name) {
			return badInput("--%s plans a policy file: give -f policy.yaml (without -f, plan judges the live cluster's pools)", name)
		}
	}
	ctx := cmd.Context()
	in, _, err := newInspector(ctx, f.kube, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	names, err := in.PoolNames(ctx)
	if err != nil {
		return err
	}
	var rows []*inspect.PoolCoverage
	fail := false
	for _, n := range names {
		c, err := in.Coverage(ctx, n)
		if errors.Is(err, inspect.ErrNoNodePool) {
			continue // deleted since the list
		}
		if err != nil {
			return err
		}
		if c == nil {
			continue // no policy selects it
		}
		rows = append(rows, c)
		fail = fail || c.Blocked() || (f.failOn == failOnWarning && !c.Covers())
	}
	if err := inspect.RenderCoverage(cmd.OutOrStdout(), rows, f.output); err != nil {
		return badInput("%v", err)
	}
	if fail {
		return exitError{code: exitFatal, err: errors.New("")}
	}
	return nil
}
