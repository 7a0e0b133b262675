package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/noderotation/node-rotation-controller/internal/inspect"
	"github.com/noderotation/node-rotation-controller/internal/table"
)

type statusFlags struct {
	kube     kubeFlags
	out      outputFlags
	watch    bool
	interval time.Duration
}

func statusCommand() *cobra.Command {
	var f statusFlags
	cmd := &cobra.Command{
		Use:   "status [NODEPOOL...] [-o table|wide|json|yaml|name|jsonpath=…|custom-columns=…] [--no-headers] [--watch]",
		Short: "One row per NodePool: policy, window, start gate, rotation in flight, candidates, forecast",
		Long: `status runs the controller's own observation and rules table, read-only,
against the cluster of the current kubeconfig context and prints, per
NodePool: the governing RotationPolicy (and whether it is feasible), the
window (open until / closed until, in the policy's zone with -o wide), the
first closed start gate and for how long, the rotation in flight (claim,
state, the transition its pass takes, age), the counts of candidates,
claims in backoff and claims not yet due, the next candidate and its forced
expiry, and the forecast: when the outstanding rotations would be done at
t_rot_est each within the windows.

--watch keeps the controller's view of the cluster (its own informer cache)
and redraws when a watched object changes, and every --interval for the
relative times.
Installed as kubectl-noderotation on the PATH it is also "kubectl noderotation status".`,
		RunE: func(cmd *cobra.Command, args []string) error { return runStatus(cmd, f, args) },
	}
	f.kube.add(cmd)
	f.out.add(cmd)
	cmd.ValidArgsFunction = completeNames(&f.kube, nodePools)
	fl := cmd.Flags()
	fl.BoolVarP(&f.watch, "watch", "w", false, "keep redrawing as the cluster changes")
	fl.DurationVar(&f.interval, "interval", 2*time.Second, "how often --watch reads the cluster")
	return cmd
}

func runStatus(cmd *cobra.Command, f statusFlags, pools []string) error {
	if err := f.out.check(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	in, cluster, err := newInspector(ctx, f.kube, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	draw := func(w io.Writer) error {
		names, listed := pools, len(pools) == 0
		if listed {
			if names, err = in.PoolNames(ctx); err != nil {
				return err
			}
		}
		rows := make([]*inspect.PoolStatus, 0, len(names))
		for _, n := range names {
			st, err := in.Status(ctx, n)
			if listed && errors.Is(err, inspect.ErrNoNodePool) {
				continue // deleted since the list
			}
			if err != nil {
				return err
			}
			rows = append(rows, st)
		}
		v := view{header: true, kind: "NodePool", render: func(w io.Writer, format string) error { return inspect.RenderStatus(w, rows, format) }}
		for _, r := range rows {
			v.items, v.names = append(v.items, r), append(v.names, r.NodePool)
		}
		return f.out.print(w, v)
	}
	if !f.watch {
		return draw(cmd.OutOrStdout())
	}
	// a watch outlives a failed read: it shows the error and reads again
	return watch(ctx, cmd.OutOrStdout(), f.interval, cluster.changed, func(w io.Writer) error {
		if err := draw(w); err != nil {
			fmt.Fprintf(w, "reading the cluster: %v\n", err)
		}
		return nil
	})
}

// watch redraws the screen whenever draw's output changes, until ctx ends:
// at once when the cache reports a change, and every interval for the
// relative times, which move by themselves.
func watch(ctx context.Context, out io.Writer, interval time.Duration, changed <-chan struct{}, draw func(io.Writer) error) error {
	var last []byte
	for {
		var buf bytes.Buffer
		if err := draw(&buf); err != nil && ctx.Err() == nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		if !bytes.Equal(buf.Bytes(), last) {
			fmt.Fprint(out, "\033[H\033[2J") // home, clear
			fmt.Fprintf(out, "every %s and on every change: rotationctl status    %s\n\n", interval, time.Now().UTC().Format(time.RFC3339))
			if _, err := out.Write(buf.Bytes()); err != nil {
				return err
			}
			last = buf.Bytes()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-time.After(interval):
		}
	}
}

// newInspector connects to the cluster, syncs the controller's view of it
// and loads the rules table the controller of this version runs. The
// cluster cap is the running controller's (its Deployment's argument)
// unless --max-concurrent-rotations names one; one that cannot be read is
// said on warn and taken as no cap.
func newInspector(ctx context.Context, k kubeFlags, warn io.Writer) (*inspect.Inspector, *clusterView, error) {
	eng, err := table.Load()
	if err != nil {
		return nil, nil, fmt.Errorf("the rules table does not prove: %w", err)
	}
	v, err := k.view(ctx)
	if err != nil {
		return nil, nil, err
	}
	limit := k.maxConcurrent
	if limit < 0 {
		if limit, err = inspect.ControllerCap(ctx, v.api, k.namespace); err != nil {
			fmt.Fprintf(warn, "warning: %v; the clusterCap gate is not judged (pass --max-concurrent-rotations)\n", err)
			limit = 0
		}
	}
	return &inspect.Inspector{Reader: v.cache, API: v.api, Engine: eng, Namespace: k.namespace, Clock: time.Now, MaxConcurrentRotations: limit,
		PullSecretsAllowed: v.pullSecrets}, v, nil
}
