package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

// kubeFlags are how status and explain reach a cluster, as kubectl does:
// --kubeconfig, else $KUBECONFIG, else ~/.kube/config, and its context.
type kubeFlags struct {
	kubeconfig, context, namespace string
}

func (k *kubeFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&k.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fl.StringVar(&k.context, "context", "", "the kubeconfig context to use")
	fl.StringVarP(&k.namespace, "controller-namespace", "n", "node-rotation-system", "the controller's namespace, where its placeholder Pods run")
}

// client builds an uncached client for the cluster.
func (k *kubeFlags) client() (client.Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context}).ClientConfig()
	if err != nil {
		return nil, badInput("loading kubeconfig: %v", err)
	}
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	return c, nil
}
