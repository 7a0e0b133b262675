package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/noderotation/node-rotation-controller/internal/cache"
	"github.com/noderotation/node-rotation-controller/internal/controller"
	"github.com/noderotation/node-rotation-controller/internal/preflight"
	"github.com/noderotation/node-rotation-controller/internal/scheme"
	"github.com/noderotation/node-rotation-controller/internal/version"
)

func run(o options) error {
	log := zap.New(zap.UseDevMode(false), zap.Level(zapcore.Level(-o.verbosity)), func(zo *zap.Options) {
		if o.logFormat == "text" {
			zo.Encoder = zapcore.NewConsoleEncoder(zapcore.EncoderConfig{TimeKey: "ts", LevelKey: "level", MessageKey: "msg", NameKey: "logger",
				EncodeTime: zapcore.RFC3339TimeEncoder, EncodeLevel: zapcore.LowercaseLevelEncoder, EncodeDuration: zapcore.StringDurationEncoder})
		}
	})
	ctrl.SetLogger(log)

	cfg, err := restConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	limitClients(cfg, o)
	setMemoryLimit(log)
	setGCPercent(log)
	setMaxProcs(log)
	s, err := scheme.New()
	if err != nil {
		return err
	}
	direct, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("building a client: %w", err)
	}
	pctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = preflight.Check(pctx, cfg, direct, o.namespace, o.priorityClass)
	cancel()
	if err != nil {
		log.Error(err, "preflight failed; not starting")
		return err
	}
	opts := managerOptions(o, s)
	opts.Cache = cache.Options(o.namespace, o.prePullUsePullSecrets)
	mgr, err := ctrl.NewManager(cfg, opts)
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if err := addProbes(mgr); err != nil {
		return err
	}
	if _, err := controller.Setup(mgr, o.reconcilerConfig(), log.WithName("rotation")); err != nil {
		return err
	}
	log.Info("starting manager", "version", version.Version(), "namespace", o.namespace, "leaderElection", o.leaderElect, "workers", o.workers, "maxConcurrentRotations", o.maxConcurrent,
		"placeholderHostnamePreference", o.hostnamePref)
	return mgr.Start(ctrl.SetupSignalHandler())
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
		}
		return c, nil
	}
	c, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("finding cluster credentials (in-cluster, $KUBECONFIG or -kubeconfig): %w", err)
	}
	return c, nil
}

func managerOptions(o options, s *runtime.Scheme) ctrl.Options {
	metrics := metricsserver.Options{BindAddress: o.metricsAddr, SecureServing: o.metricsSecure}
	if o.metricsSecure {
		metrics.CertDir = metricsCertDir()
		metrics.TLSOpts = append(metrics.TLSOpts, selfSignedWhenNoneMounted(metrics.CertDir))
	}
	if o.metricsAuth {
		// docs/performance.md#startup has the filter's cost
		metrics.FilterProvider = metricsAuth
	}
	return ctrl.Options{
		Scheme:                  s,
		Metrics:                 metrics,
		HealthProbeBindAddress:  o.probeAddr,
		PprofBindAddress:        o.pprofAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        o.leaderElectionID,
		LeaderElectionNamespace: o.namespace,
		// A clean stop (SIGTERM on a rollout) hands the Lease over at once
		// instead of making the next leader wait out its duration; the
		// process exits right after the manager returns, as this requires.
		LeaderElectionReleaseOnCancel: true,
		// Deprecated in controller-runtime only for managers shorter-lived
		// than their process; this one lives as long as the process.
		EventBroadcaster: controller.EventBroadcaster(), //nolint:staticcheck
	}
}

func addProbes(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the liveness probe: %w", err)
	}
	// Ready only after the caches synced.
	err := mgr.AddReadyzCheck("caches", func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return fmt.Errorf("caches not synced")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("adding the readiness probe: %w", err)
	}
	return nil
}

// reconcilerConfig is what the flags set of the reconciler.
func (o options) reconcilerConfig() controller.Config {
	return controller.Config{Namespace: o.namespace, PlaceholderPriorityClass: o.priorityClass, PlaceholderImage: o.placeholderImage,
		PrePullImage: prePullImageOr(o.prePullImage), PrePullImagePullSecrets: names(o.prePullSecrets), PrePullUsePullSecrets: o.prePullUsePullSecrets, SkipHostnamePreference: !o.hostnamePref, Workers: o.workers, MaxConcurrentRotations: o.maxConcurrent}
}
