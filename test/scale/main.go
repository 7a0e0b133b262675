//go:build scale

// Command scale is the fleet-scale benchmark (make bench-scale, issue #13):
// it brings up its own local cluster (test/world/cluster.sh, nodes Ready at
// once, its own run directory and ports so it never meets another cluster),
// fills it with N NodeClaims and their Nodes across P NodePools and M Pods
// bound to those Nodes, and runs the controller binary against it with a
// RotationPolicy that governs every pool but whose window is closed, so the
// controller watches and caches everything and rotates nothing. It measures
// the controller's memory (/proc/PID/status, the heap from /metrics) and CPU
// (/proc/PID/stat) on a 4-node cluster first, then at N, at idle and under a
// NodeClaim status churn, prints one table and brings the cluster down.
//
// It is a measurement, not a test: nothing here passes or fails on a
// figure. Usage:
//
//	go run -tags scale ./test/scale [-nodes 1000 -pods 10000 -pools 20 ...]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/process"
	"github.com/noderotation/node-rotation-controller/test/testenv"
)

const (
	workloadNS    = "nrc-scale"
	selectorLabel = "nrc-scale"
	instanceType  = "c-4x-amd64-linux"
	churnType     = "BenchmarkChurn"
	churnOwner    = "nrc-scale-churn"
	baselineNodes = 4
	// clkTck is USER_HZ, the unit of utime and stime in /proc/PID/stat:
	// 100 on every Linux architecture Go builds for.
	clkTck = 100
)

// clusterEnv is the benchmark's own cluster: a run directory and ports no
// other cluster of this repository uses, whatever the caller's environment
// says, and nodes that are Ready as soon as they appear.
var clusterEnv = map[string]string{
	"ETCD_PORT":              "33790",
	"ETCD_PEER_PORT":         "33800",
	"APISERVER_PORT":         "26443",
	"KCM_PORT":               "20357",
	"SCHEDULER_PORT":         "20359",
	"KWOK_PORT":              "20347",
	"KARPENTER_METRICS_PORT": "28080",
	"KARPENTER_HEALTH_PORT":  "28081",
	"NODE_BOOT_DELAY_MS":     "0",
	// kwok's Node status rewrites come about 10 minutes after the fill,
	// in waves through the measurements; a day puts them past any run
	// (a 5,000-node fill takes the best part of an hour). The leases
	// keep nodes healthy.
	"NODE_HEARTBEAT_DELAY_MS": "86400000",
}

type config struct {
	nodes, pods, pools int
	clusterDir         string
	settle             time.Duration
	idle               time.Duration
	churnRate          int
	churnWindow        time.Duration
	workers            int
	profileDir         string
	rotatePools        int
	rotatePerPool      int
	rotateAtOnce       int // the rotation policy's maxUnavailable
	controllerArgs     string
	variants           [][]string // controller runs measured after the scale run, on the same fleet: environments, binary=PATH for another build
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envDur(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envStr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func parseConfig() config {
	var c config
	flag.IntVar(&c.nodes, "nodes", envInt("SCALE_NODES", 1000), "NodeClaims (and Nodes) at scale ($SCALE_NODES)")
	flag.IntVar(&c.pods, "pods", envInt("SCALE_PODS", 10000), "Pods at scale, spread evenly over the Nodes ($SCALE_PODS)")
	flag.IntVar(&c.pools, "pools", envInt("SCALE_POOLS", 20), "NodePools the claims are spread over ($SCALE_POOLS)")
	flag.StringVar(&c.clusterDir, "cluster-dir", envStr("SCALE_CLUSTER_DIR", "/tmp/nrc-scale"), "the benchmark cluster's run directory ($SCALE_CLUSTER_DIR)")
	flag.DurationVar(&c.settle, "settle", envDur("SCALE_SETTLE", 30*time.Second), "memory is sampled over this window once the controller is quiet ($SCALE_SETTLE)")
	flag.DurationVar(&c.idle, "idle", envDur("SCALE_IDLE", 60*time.Second), "idle CPU window, in 10 s slices interleaved with the churn's; the larger of -idle and -churn-window sets both ($SCALE_IDLE)")
	flag.IntVar(&c.churnRate, "churn-rate", envInt("SCALE_CHURN_RATE", 20), "NodeClaim status updates per second during the churn ($SCALE_CHURN_RATE)")
	flag.DurationVar(&c.churnWindow, "churn-window", envDur("SCALE_CHURN_WINDOW", 60*time.Second), "churn window, in 10 s slices interleaved with the idle ones ($SCALE_CHURN_WINDOW)")
	flag.IntVar(&c.workers, "workers", envInt("SCALE_WORKERS", 16), "concurrent creates while filling the cluster ($SCALE_WORKERS)")
	flag.StringVar(&c.profileDir, "profile-dir", envStr("SCALE_PROFILE_DIR", ""), "when set, the controller serves pprof and each run saves a heap profile once settled and a CPU profile of the churn here ($SCALE_PROFILE_DIR)")
	flag.IntVar(&c.rotatePools, "rotate-pools", envInt("SCALE_ROTATE_POOLS", 20), "pools rotating at once in the rotation phase, after one pool alone; 0 skips the phase ($SCALE_ROTATE_POOLS)")
	flag.IntVar(&c.rotatePerPool, "rotate-per-pool", envInt("SCALE_ROTATE_PER_POOL", 2), "claims each rotating pool rotates, one after another ($SCALE_ROTATE_PER_POOL)")
	flag.IntVar(&c.rotateAtOnce, "rotate-max-unavailable", envInt("SCALE_ROTATE_MAX_UNAVAILABLE", 1), "the rotation phase's policy rotates this many claims of a pool at once (spec.surge.maxUnavailable, docs/design.md#throughput) ($SCALE_ROTATE_MAX_UNAVAILABLE)")
	flag.StringVar(&c.controllerArgs, "controller-args", envStr("SCALE_CONTROLLER_ARGS", ""), "extra flags for the controller, space-separated, e.g. \"-workers 20 -kube-api-qps 500\" ($SCALE_CONTROLLER_ARGS)")
	variants := flag.String("variants", envStr("SCALE_VARIANTS", ""), "controller runs to measure at scale after the default one, on the same fleet: ;-separated, each space-separated KEY=value for its environment or binary=PATH for another build of it, e.g. \"GOMAXPROCS=1;binary=/tmp/old\" ($SCALE_VARIANTS)")
	flag.Parse()
	for _, v := range strings.Split(*variants, ";") {
		if env := strings.Fields(v); len(env) > 0 {
			c.variants = append(c.variants, env)
		}
	}
	return c
}

func logf(format string, args ...any) {
	fmt.Printf("[scale %s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func main() {
	cfg := parseConfig()
	if cfg.nodes < baselineNodes || cfg.pools < 1 || cfg.pods < 0 || cfg.churnRate < 1 || cfg.rotatePools < 0 || cfg.rotatePerPool < 1 || cfg.rotateAtOnce < 1 {
		fmt.Fprintf(os.Stderr, "need -nodes ≥ %d, -pools ≥ 1, -pods ≥ 0, -churn-rate ≥ 1, -rotate-pools ≥ 0, -rotate-per-pool ≥ 1\n", baselineNodes)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	b := &bench{cfg: cfg, start: time.Now()}
	err := b.run(ctx)
	stop()
	b.cleanup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-scale: %v\n", err)
		os.Exit(1)
	}
}

type bench struct {
	cfg     config
	start   time.Time
	root    string
	cluster *fixtures.Cluster
	fast    client.Client // the admin client with a high rate limit, for filling the cluster
	ctrl    *process.Controller
	bin     string
	upDone  bool

	claims []string          // names, in creation order
	nodeOf map[string]string // claim → node
	rows   []row
	notes  []string
}

type row struct{ what, base, scale string }

func (b *bench) clusterScript(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(b.root, "test/world/cluster.sh"), args...)
	cmd.Dir = b.root
	cmd.Env = append(os.Environ(), "NRC_CLUSTER_DIR="+b.cfg.clusterDir)
	for k, v := range clusterEnv {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	return cmd
}

// cleanup stops the controller and brings the benchmark's cluster down,
// whatever happened before.
func (b *bench) cleanup() {
	if b.ctrl != nil {
		b.ctrl.Stop(15 * time.Second)
		b.ctrl = nil
	}
	if b.root != "" && b.upDone {
		logf("cluster down (%s)", b.cfg.clusterDir)
		if err := b.clusterScript("down").Run(); err != nil {
			fmt.Fprintf(os.Stderr, "cluster down: %v\n", err)
		}
	}
}

func (b *bench) run(ctx context.Context) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	b.root = root
	// A previous run killed before its cleanup left this directory's
	// processes up: stop them by their recorded PIDs first.
	_ = b.clusterScript("down").Run()
	b.upDone = true
	t0 := time.Now()
	logf("cluster up in %s (ports: apiserver %s, etcd %s)", b.cfg.clusterDir, clusterEnv["APISERVER_PORT"], clusterEnv["ETCD_PORT"])
	up := b.clusterScript("up")
	out, err := up.Output()
	if err != nil {
		return fmt.Errorf("cluster up: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	kubeconfig := lines[len(lines)-1]
	b.rows = append(b.rows, row{"cluster up (s)", fmt.Sprintf("%.0f", time.Since(t0).Seconds()), ""})

	if b.cluster, err = fixtures.Connect(kubeconfig); err != nil {
		return err
	}
	fastCfg := rest.CopyConfig(b.cluster.Config)
	fastCfg.QPS, fastCfg.Burst = 2000, 4000
	if b.fast, err = client.New(fastCfg, client.Options{Scheme: b.cluster.Client.Scheme()}); err != nil {
		return err
	}
	bin, err := process.Binary(root, filepath.Join(b.cfg.clusterDir, "controller"))
	if err != nil {
		return err
	}
	b.bin = bin
	logf("controller binary %s", bin)
	if err := b.setup(ctx); err != nil {
		return err
	}

	// The 4-node baseline: the same pools and policy, a fresh controller.
	if err := b.fill(ctx, baselineNodes, b.podsFor(baselineNodes), nil); err != nil {
		return err
	}
	base, err := b.measure(ctx, bin, kubeconfig, "baseline", nil)
	if err != nil {
		return err
	}

	// Scale up with the controller stopped, then a fresh controller, so its
	// memory is that of a start on a cluster of this size.
	fillRows := map[string]string{}
	if err := b.fill(ctx, b.cfg.nodes, b.cfg.pods, fillRows); err != nil {
		return err
	}
	scale, err := b.measure(ctx, bin, kubeconfig, "scale", nil)
	if err != nil {
		return err
	}
	// Each variant, then the default once more: the default's two runs
	// show how far a figure moves between runs on this machine.
	var variants []*result
	for _, v := range b.cfg.variants {
		vbin, env := variant(bin, v)
		parts := slices.Clone(env)
		if vbin != bin {
			parts = append(parts, "binary="+filepath.Base(vbin))
		}
		// The label names the run's log and profile files.
		label := fmt.Sprintf("scale%d-%s", len(variants)+1, strings.ReplaceAll(strings.Join(parts, ","), "/", "_"))
		r, err := b.measure(ctx, vbin, kubeconfig, label, env)
		if err != nil {
			return err
		}
		variants = append(variants, r)
	}
	if len(variants) > 0 {
		r, err := b.measure(ctx, bin, kubeconfig, "scale-again", nil)
		if err != nil {
			return err
		}
		variants = append(variants, r)
	}
	var phases []*phase
	if b.cfg.rotatePools > 0 {
		if phases, err = b.rotations(ctx, bin, kubeconfig); err != nil {
			b.notes = append(b.notes, "rotation phase: "+err.Error())
			logf("rotation phase failed: %v", err)
		}
	}
	b.report(base, scale, fillRows, kubeconfig)
	b.reportVariants(scale, variants)
	b.reportRotations(phases)
	return nil
}

// variant is the binary and environment of a -variants entry.
func variant(bin string, v []string) (string, []string) {
	var env []string
	for _, kv := range v {
		if p, ok := strings.CutPrefix(kv, "binary="); ok {
			bin = p
		} else {
			env = append(env, kv)
		}
	}
	return bin, env
}

func (b *bench) podsFor(nodes int) int {
	return b.cfg.pods * nodes / b.cfg.nodes
}

func poolName(i int) string { return fmt.Sprintf("scale-%02d", i) }
