package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	leancache "github.com/noderotation/node-rotation-controller/internal/cache"
	"github.com/noderotation/node-rotation-controller/internal/inspect"
	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

// kubeFlags are how status, explain, plan and version reach a cluster:
// kubectl's own connection flags (--kubeconfig, --context, --cluster,
// --user, --as, --as-group, --token, --server, --request-timeout, …)
// through cli-runtime, resolved as kubectl resolves them, and the
// controller's namespace. kubectl's -n/--namespace is not among them:
// every object these commands read is cluster-scoped but the controller's
// own, which --controller-namespace names.
type kubeFlags struct {
	conn      *genericclioptions.ConfigFlags
	namespace string
	// maxConcurrent is the controller's -max-concurrent-rotations, so the
	// clusterCap gate is judged as the controller judges it; -1, the
	// default, reads it from the controller's Deployment.
	maxConcurrent int
}

func (k *kubeFlags) add(cmd *cobra.Command) {
	k.conn = genericclioptions.NewConfigFlags(true)
	k.conn.Namespace = nil
	fl := cmd.Flags()
	k.conn.AddFlags(fl)
	fl.StringVar(&k.namespace, "controller-namespace", "node-rotation-system", "the controller's namespace, where its Deployment and placeholder Pods run")
	fl.IntVar(&k.maxConcurrent, "max-concurrent-rotations", -1, "the controller's -max-concurrent-rotations, for the clusterCap gate: -1 reads it from the controller's Deployment in the controller namespace (its chart value maxConcurrentRotations); 0 is no cap")
}

func (k *kubeFlags) restConfig() (*rest.Config, error) {
	cfg, err := k.conn.ToRESTConfig()
	if err != nil {
		return nil, badInput("loading kubeconfig: %v", err)
	}
	// a handful of lists per view, and a Pod list when a start is sized:
	// client-go's default of 5 per second would only slow the first view
	cfg.QPS, cfg.Burst = 20, 40
	return cfg, nil
}

// reach asks the API server its version before anything else, so that a
// cluster that cannot be reached is one line naming the kubeconfig, the
// context and the server, not the rest-mapping error a first list would
// wrap around it.
func (k *kubeFlags) reach(ctx context.Context, cfg *rest.Config) error {
	c := rest.CopyConfig(cfg)
	if c.Timeout == 0 || c.Timeout > reachTimeout {
		c.Timeout = reachTimeout
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c)
	if err == nil {
		_, err = dc.ServerVersion()
	}
	if err == nil {
		return nil
	}
	return unreachable(k.where(), cfg.Host, err)
}

// reachTimeout bounds reach unless --request-timeout is shorter.
const reachTimeout = 15 * time.Second

// where names the kubeconfig and context in use, as kubectl resolves them.
func (k *kubeFlags) where() string {
	path := k.conn.ToRawKubeConfigLoader().ConfigAccess().GetDefaultFilename()
	if f := k.conn.KubeConfig; f != nil && *f != "" {
		path = *f
	}
	raw, err := k.conn.ToRawKubeConfigLoader().RawConfig()
	ctxName := ""
	if err == nil {
		ctxName = raw.CurrentContext
	}
	if c := k.conn.Context; c != nil && *c != "" {
		ctxName = *c
	}
	if ctxName == "" {
		return "kubeconfig " + path
	}
	return fmt.Sprintf("kubeconfig %s, context %s", path, ctxName)
}

// unreachable is one line: where, the server, and the innermost cause
// (connection refused, no such host, a TLS or an HTTP status error).
func unreachable(where, server string, err error) error {
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	var oe *net.OpError
	if errors.As(cause, &oe) && oe.Err != nil {
		cause = oe.Err
	}
	var se *os.SyscallError
	if errors.As(cause, &se) && se.Err != nil {
		cause = se.Err
	}
	msg := strings.ReplaceAll(cause.Error(), "\n", " ")
	return exitError{code: exitBadInput, err: fmt.Errorf("cannot reach the cluster at %s (%s): %s", server, where, msg)}
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
	// pullSecrets: the controller runs with -prepull-use-pull-secrets.
	pullSecrets bool
}

// watched are the kinds a view reads; each is cached and synced up front.
var watched = []client.Object{&karpv1.NodePool{}, &karpv1.NodeClaim{}, &corev1.Node{}, &v1alpha1.RotationPolicy{}, &corev1.Pod{}, &policyv1.PodDisruptionBudget{}}

func (k *kubeFlags) view(ctx context.Context) (*clusterView, error) {
	cfg, err := k.restConfig()
	if err != nil {
		return nil, err
	}
	if err := k.reach(ctx, cfg); err != nil {
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
	// A user who may not list NodePools is told at once, not after the
	// cache has retried its list for syncTimeout.
	if err := api.List(ctx, &karpv1.NodePoolList{}, client.Limit(1)); apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return nil, fmt.Errorf("reading %s (%s): %w", cfg.Host, k.where(), err)
	}
	// the controller's own cache scope: its Pods in every namespace when it
	// runs with -prepull-use-pull-secrets (unreadable: its namespace only)
	everywhere, _ := inspect.ControllerPullSecrets(ctx, api, k.namespace)
	opts := leancache.Options(k.namespace, everywhere)
	opts.Scheme = s
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("building the cache for %s: %w", cfg.Host, err)
	}
	v := &clusterView{cache: c, api: api, changed: make(chan struct{}, 1), pullSecrets: everywhere}
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
		return nil, fmt.Errorf("reading %s: the cache did not sync (is the API server reachable, and may this user list nodepools, nodeclaims, nodes, rotationpolicies, poddisruptionbudgets and the controller namespace's pods — every namespace's when the controller runs with -prepull-use-pull-secrets?)", cfg.Host)
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
