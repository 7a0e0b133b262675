package controller

import (
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/announce"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/sweep"
	"github.com/noderotation/node-rotation-controller/internal/table"
)

// Config is what the reconcilers need from the command line.
type Config struct {
	Namespace                string
	PlaceholderPriorityClass string
	PlaceholderImage         string
	// PrePullImage and PrePullImagePullSecrets: PlaceholderConfig's, the
	// controller's own image and the Secrets it is pulled with.
	PrePullImage            string
	PrePullImagePullSecrets []string
	// PrePullUsePullSecrets: spec.prePull.usePullSecrets may be honoured —
	// the controller may create and delete Pods in every namespace, and its
	// cache holds its Pods there (docs/design.md#pre-pull).
	PrePullUsePullSecrets bool
	// SkipHostnamePreference: PlaceholderConfig's (Karpenter v1.0/v1.1).
	SkipHostnamePreference bool
	// Name distinguishes controllers when several run in one process (tests).
	Name  string
	Clock func() time.Time
	// Workers is how many NodePools are reconciled at once (default 1); a
	// pool is never reconciled by two workers at once, so each stays serial.
	Workers int
	// MaxConcurrentRotations caps the rotations in flight across the
	// cluster; 0 is no cap (docs/design.md#cluster-cap).
	MaxConcurrentRotations int
}

// Setup loads and proves the rules table and registers the NodePool
// reconciler with the manager.
func Setup(mgr ctrl.Manager, cfg Config, log logr.Logger) (*NodePoolReconciler, error) {
	eng, err := table.Load()
	if err != nil {
		return nil, fmt.Errorf("the rules table does not prove: %w", err)
	}
	if err := announce.Check(); err != nil {
		return nil, fmt.Errorf("the announcer cannot make every announcement the table may name: %w", err)
	}
	log.Info("rules table loaded", "version", eng.Version())
	metrics.Register(eng.Version())
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if cfg.Name == "" {
		cfg.Name = "nodepool-rotation"
	}
	r := NewNodePoolReconciler(mgr.GetClient(), mgr.GetAPIReader(), eng, cfg, log, mgr.GetEventRecorderFor("node-rotation-controller"))
	sw := &sweep.Sweeper{Client: mgr.GetClient(), Fresh: mgr.GetAPIReader(), Namespace: cfg.Namespace, Say: r.Announcer, Clock: cfg.Clock,
		PrePullEverywhere: cfg.PrePullUsePullSecrets}
	r.Sweep = sw.Run
	if err := r.SetupWithManager(mgr, cfg.Name, max(cfg.Workers, 1)); err != nil {
		return nil, fmt.Errorf("setting up the NodePool reconciler: %w", err)
	}
	ps := &PolicyStatusReconciler{Client: mgr.GetClient(), Log: log.WithName("policy-status"), Clock: cfg.Clock, PullSecretsAllowed: cfg.PrePullUsePullSecrets}
	if err := ps.SetupWithManager(mgr, cfg.Name+"-policy-status"); err != nil {
		return nil, fmt.Errorf("setting up the RotationPolicy status reconciler: %w", err)
	}
	return r, nil
}

// NewNodePoolReconciler wires the NodePool reconciler on c (the cache it
// observes and the client it writes through) and fresh (uncached reads) as
// Setup does, without a manager: rotationctl simulate runs it on an
// in-memory API. cfg.Clock must be set.
func NewNodePoolReconciler(c client.Client, fresh client.Reader, eng *engine.Engine, cfg Config, log logr.Logger, rec record.EventRecorder) *NodePoolReconciler {
	return &NodePoolReconciler{
		Client: c, Fresh: fresh, Engine: eng, Log: log,
		Observer: &observe.Observer{Cache: c, API: fresh, Namespace: cfg.Namespace, Clock: cfg.Clock, Rules: eng, Memory: observe.NewMemory(),
			PullSecretsAllowed: cfg.PrePullUsePullSecrets},
		Cap:          NewClusterCap(cfg.MaxConcurrentRotations),
		Expectations: NewExpectations(cfg.Clock),
		Announcer:    announce.New(log, rec),
		Placeholder: PlaceholderConfig{Namespace: cfg.Namespace, PriorityClass: cfg.PlaceholderPriorityClass, Image: cfg.PlaceholderImage,
			SkipHostnamePreference: cfg.SkipHostnamePreference, PrePullImage: cfg.PrePullImage, PrePullImagePullSecrets: cfg.PrePullImagePullSecrets},
	}
}
