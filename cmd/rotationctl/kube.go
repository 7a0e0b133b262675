package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	leancache "github.com/noderotation/node-rotation-controller/internal/cache"
	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

// kubeFlags are how status and explain reach a cluster, as kubectl does:
// --kubeconfig, else $KUBECONFIG, else ~/.kube/config, and its context.
type kubeFlags struct {
	kubeconfig, context, namespace string
	// maxConcurrent is the controller's -max-concurrent-rotations, so the
	// clusterCap gate is judged as the controller judges it; -1, the
	// default, reads it from the controller's Deployment.
	maxConcurrent int
}

func (k *kubeFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&k.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fl.StringVar(&k.context, "context", "", "the kubeconfig context to use")
	fl.StringVarP(&k.namespace, "controller-namespace", "n", "node-rotation-system", "the controller's namespace, where its placeholder Pods run")
	fl.IntVar(&k.maxConcurrent, "max-concurrent-rotations", -1, "the controller's -max-concurrent-rotations, for the clusterCap gate: -1 reads it from the controller's Deployment in the controller namespace (its chart value maxConcurrentRotations); 0 is no cap")
}

func (k *kubeFlags) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: k.context}).ClientConfig()
	if err != nil {
		return nil, badInput("loading kubeconfig: %v", err)
	}
	// a handful of lists per view, and a Pod list when a start is sized:
	// client-go's default of 5 per second would only slow the first view
	cfg.QPS, cfg.Burst = 20, 40
	return cfg, nil
}

// clusterView is the cluster as the controller sees it: an informer cache
// built with the controller's own cache options (the same kinds, the same
// namespace and label scopes), synced before the first view, and an
// uncached client for the per-node Pod lists.
type clusterView struct {
	cache cache.Cache
	api   client.Client
	// changed receives a value (dropping it when one is pending) whenever
	// a cached object changes: --watch redraws on it.
	changed chan struct{}
}

// watched are the kinds a view reads; each is cached and synced up front.
var watched = []client.Object{&karpv1.NodePool{}, &karpv1.NodeClaim{}, &corev1.Node{}, &v1alpha1.RotationPolicy{}, &corev1.Pod{}, &policyv1.PodDisruptionBudget{}}

func (k *kubeFlags) view(ctx context.Context) (*clusterView, error) {
	cfg, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	api, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	opts := leancache.Options(k.namespace)
	opts.Scheme = s
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("building the cache for %s: %w", cfg.Host, err)
	}
	v := &clusterView{cache: c, api: api, changed: make(chan struct{}, 1)}
	notify := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { v.signal() },
		UpdateFunc: func(any, any) { v.signal() },
		DeleteFunc: func(any) { v.signal() },
	}
	for _, obj := range watched {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("watching %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(notify); err != nil {
			return nil, fmt.Errorf("watching %T: %w", obj, err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	// a list the user may not make is retried forever: give up in time
	syncCtx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !c.WaitForCacheSync(syncCtx) {
		return nil, fmt.Errorf("reading %s: the cache did not sync (is the API server reachable, and may this user list nodepools, nodeclaims, nodes, rotationpolicies, poddisruptionbudgets and the controller namespace's pods?)", cfg.Host)
	}
	return v, nil
}

// syncTimeout bounds the first list of every kind.
const syncTimeout = time.Minute

func (v *clusterView) signal() {
	select {
	case v.changed <- struct{}{}:
	default:
	}
}
