package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/noderotation/node-rotation-controller/internal/surge"
	"github.com/noderotation/node-rotation-controller/internal/version"
)

// options are the manager's flags.
type options struct {
	namespace        string
	priorityClass    string
	placeholderImage string
	prePullImage     string
	prePullSecrets   string
	// prePullUsePullSecrets: the chart granted what spec.prePull's
	// usePullSecrets needs (Pods in every namespace).
	prePullUsePullSecrets bool
	hostnamePref          bool
	metricsAddr           string
	metricsSecure         bool
	metricsAuth           bool
	probeAddr             string
	leaderElect           bool
	leaderElectionID      string
	logFormat             string
	verbosity             int
	kubeconfig            string
	workers               int
	maxConcurrent         int
	apiQPS                float64
	apiBurst              int
	pprofAddr             string
	version               bool
}

// imageRepository is where the project publishes the controller's image
// (the chart's image.repository).
const imageRepository = "ghcr.io/noderotation/node-rotation-controller"

// prePullImageOr is the image the pre-pull Pod installs its no-op from:
// the flag's, else the published image of this binary's release (a binary
// run outside the chart; the chart passes the image it runs, a mirror's
// included).
func prePullImageOr(flagged string) string {
	if flagged != "" {
		return flagged
	}
	return imageRepository + ":" + version.Version()
}

// names splits a comma-separated list, dropping blanks.
func names(list string) []string {
	var out []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// errVersion is parseFlags' answer to -version: print the version, exit 0.
var errVersion = errors.New("version requested")

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("node-rotation-controller", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.namespace, "namespace", "node-rotation-system", "namespace of the controller and its placeholder Pods")
	fs.StringVar(&o.priorityClass, "placeholder-priority-class", "node-rotation-placeholder", "negative, never-preempting PriorityClass of the placeholder")
	fs.StringVar(&o.placeholderImage, "placeholder-image", surge.DefaultImage, "image of the placeholder's single container")
	fs.StringVar(&o.prePullImage, "prepull-image", "", "the controller's own image, whose binary the pre-pull Pod's init container installs as the no-op its containers run (spec.prePull); empty: "+imageRepository+":<this binary's version>")
	fs.StringVar(&o.prePullSecrets, "prepull-image-pull-secrets", "", "comma-separated Secrets of the controller's namespace the pre-pull Pod pulls -prepull-image with (a private registry or mirror)")
	fs.BoolVar(&o.prePullUsePullSecrets, "prepull-use-pull-secrets", false, "honour spec.prePull.usePullSecrets: pre-pull Pods in the moving Pods' namespaces with their imagePullSecrets (needs Pods create, delete, list and watch in every namespace, which the chart grants with prePull.usePullSecrets); off, such images are skipped")
	fs.BoolVar(&o.hostnamePref, "placeholder-hostname-preference", true, "the placeholder prefers to avoid the old node and near-deadline nodes by kubernetes.io/hostname; false on Karpenter v1.0 and v1.1, which ignore such a Pod")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", `metrics endpoint address; "0" disables it`)
	fs.BoolVar(&o.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS (a self-signed certificate unless one is mounted)")
	fs.BoolVar(&o.metricsAuth, "metrics-auth", false, "require a token allowed to GET /metrics (needs tokenreviews and subjectaccessreviews create, beyond the default RBAC)")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "liveness and readiness probe address")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader through a Lease so only one replica acts")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", "node-rotation-controller", "name of the leader-election Lease")
	fs.StringVar(&o.logFormat, "log-format", "json", "log format: json or text")
	fs.IntVar(&o.verbosity, "v", 0, "log verbosity; 1 adds the per-pass findings and a heartbeat")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig path (default: in-cluster, or $KUBECONFIG)")
	fs.IntVar(&o.workers, "workers", 10, "NodePools reconciled at once (each pool stays serial)")
	fs.IntVar(&o.maxConcurrent, "max-concurrent-rotations", 0, "rotations in flight across the cluster at once (each holds a surge node); 0 is no cap: one per NodePool")
	fs.Float64Var(&o.apiQPS, "kube-api-qps", 50, "requests per second to the API server, shared by every worker")
	fs.IntVar(&o.apiBurst, "kube-api-burst", 100, "burst above -kube-api-qps, shared by every worker")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", `Go profiling endpoint (net/http/pprof) address, for diagnosing CPU and memory; "" or "0" disables it`)
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fmt.Println("Usage: node-rotation-controller [flags]")
			fs.PrintDefaults()
			return o, flag.ErrHelp
		}
		return o, err
	}
	if o.version {
		return o, errVersion
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case o.logFormat != "json" && o.logFormat != "text":
		return o, fmt.Errorf("-log-format %q: want json or text", o.logFormat)
	case o.verbosity < 0:
		return o, fmt.Errorf("-v %d: must not be negative", o.verbosity)
	case o.namespace == "":
		return o, errors.New("-namespace must not be empty")
	case o.priorityClass == "":
		return o, errors.New("-placeholder-priority-class must not be empty")
	case o.workers < 1:
		return o, fmt.Errorf("-workers %d: must be at least 1", o.workers)
	case o.maxConcurrent < 0:
		return o, fmt.Errorf("-max-concurrent-rotations %d: must not be negative (0 is no cap)", o.maxConcurrent)
	case o.apiQPS <= 0 || o.apiBurst < 1:
		return o, fmt.Errorf("-kube-api-qps %g, -kube-api-burst %d: must be positive", o.apiQPS, o.apiBurst)
	}
	return o, nil
}
