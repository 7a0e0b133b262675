package main

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/noderotation/node-rotation-controller/internal/inspect"
)

func explainCommand() *cobra.Command {
	var (
		kube kubeFlags
		out  outputFlags
	)
	cmd := &cobra.Command{
		Use:   "explain nodeclaim/NAME | nodepool/NAME [-o table|json|yaml|name|jsonpath=…|custom-columns=…]",
		Short: "Why a NodeClaim is or is not rotating now; what a NodePool's pass does and on which facts",
		Long: `explain runs the controller's own observation and rules table, read-only.

For a NodeClaim it prints its census class — not due until T, opted out by
the do-not-disrupt on its Node, in backoff until T, in flight, not Ready,
a candidate and its place in line — with its forced expiry, when it becomes
due, and the forecast start of its rotation.

For a NodePool it prints the pool's status and, for each machine, the
transition a pass takes now, every fact that decision read with its value,
and the steps it would run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, ok := strings.Cut(args[0], "/")
			if !ok || name == "" {
				return badInput("want nodeclaim/NAME or nodepool/NAME, got %q", args[0])
			}
			kind = strings.TrimSuffix(strings.ToLower(kind), "s")
			if kind != "nodeclaim" && kind != "nodepool" {
				return badInput("explain knows nodeclaim/NAME and nodepool/NAME, not %q", args[0])
			}
			if err := out.check(); err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel() // stops the cache's watches
			in, _, err := newInspector(ctx, kube, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if kind == "nodeclaim" {
				ex, err := in.ExplainClaim(ctx, name)
				if err != nil {
					return err
				}
				return out.print(cmd.OutOrStdout(), view{items: []any{ex}, kind: "NodeClaim", names: []string{name}, single: true,
					render: func(w io.Writer, format string) error { return inspect.RenderClaim(w, ex, format) }})
			}
			ex, err := in.ExplainPool(ctx, name)
			if err != nil {
				return err
			}
			return out.print(cmd.OutOrStdout(), view{items: []any{ex}, kind: "NodePool", names: []string{name}, single: true,
				render: func(w io.Writer, format string) error { return inspect.RenderPool(w, ex, format) }})
		},
	}
	kube.add(cmd)
	out.add(cmd)
	cmd.ValidArgsFunction = completeNames(&kube, kindSlashName)
	return cmd
}
