package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/internal/inspect"
	"github.com/noderotation/node-rotation-controller/internal/version"
)

func versionCommand() *cobra.Command {
	var (
		kube       kubeFlags
		clientOnly bool
	)
	cmd := &cobra.Command{
		Use:   "version [--client]",
		Short: "This CLI's version and the installed controller's",
		Long: `version prints rotationctl's own version, then, unless --client, the
version of each controller Deployment in the controller namespace (its
chart's app.kubernetes.io/version label) and the image it runs. A cluster
that cannot be read is an error after the client's line, as kubectl
version does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Client: %s\n", version.Line("rotationctl"))
			if clientOnly {
				return nil
			}
			installed, err := kube.controllerVersions(cmd.Context())
			if err != nil {
				return err
			}
			for _, i := range installed {
				fmt.Fprintf(out, "Controller: %s\n", i)
			}
			return nil
		},
	}
	kube.add(cmd)
	cmd.Flags().BoolVar(&clientOnly, "client", false, "print the client's version only; do not read the cluster")
	return cmd
}

// controllerVersions reads the controller Deployments with a plain client:
// one list, no cache to sync.
func (k *kubeFlags) controllerVersions(ctx context.Context) ([]inspect.Installed, error) {
	cfg, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	if err := k.reach(ctx, cfg); err != nil {
		return nil, err
	}
	api, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	installed, err := inspect.ControllerVersions(ctx, api, k.namespace)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Host, err)
	}
	return installed, nil
}
