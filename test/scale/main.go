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
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
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
}

type config struct {
	nodes, pods, pools int
	clusterDir         string
	settle             time.Duration
	idle               time.Duration
	churnRate          int
	churnWindow        time.Duration
	workers            int
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
	flag.DurationVar(&c.idle, "idle", envDur("SCALE_IDLE", 60*time.Second), "idle CPU window ($SCALE_IDLE)")
	flag.IntVar(&c.churnRate, "churn-rate", envInt("SCALE_CHURN_RATE", 20), "NodeClaim status updates per second during the churn ($SCALE_CHURN_RATE)")
	flag.DurationVar(&c.churnWindow, "churn-window", envDur("SCALE_CHURN_WINDOW", 60*time.Second), "churn window ($SCALE_CHURN_WINDOW)")
	flag.IntVar(&c.workers, "workers", envInt("SCALE_WORKERS", 16), "concurrent creates while filling the cluster ($SCALE_WORKERS)")
	flag.Parse()
	return c
}

func logf(format string, args ...any) {
	fmt.Printf("[scale %s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func main() {
	cfg := parseConfig()
	if cfg.nodes < baselineNodes || cfg.pools < 1 || cfg.pods < 0 || cfg.churnRate < 1 {
		fmt.Fprintf(os.Stderr, "need -nodes ≥ %d, -pools ≥ 1, -pods ≥ 0, -churn-rate ≥ 1\n", baselineNodes)
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
	base, err := b.measure(ctx, bin, kubeconfig, "baseline")
	if err != nil {
		return err
	}

	// Scale up with the controller stopped, then a fresh controller, so its
	// memory is that of a start on a cluster of this size.
	fillRows := map[string]string{}
	if err := b.fill(ctx, b.cfg.nodes, b.cfg.pods, fillRows); err != nil {
		return err
	}
	scale, err := b.measure(ctx, bin, kubeconfig, "scale")
	if err != nil {
		return err
	}
	b.report(base, scale, fillRows, kubeconfig)
	return nil
}

func (b *bench) podsFor(nodes int) int {
	return b.cfg.pods * nodes / b.cfg.nodes
}

func poolName(i int) string { return fmt.Sprintf("scale-%02d", i) }

// setup installs what the chart would, the workload namespace, P NodePools
// Karpenter leaves alone (no expiry acted on, no consolidation, a
// disruption budget of zero nodes) and one RotationPolicy governing them all
// whose only window is on a day three days from today: closed for the run.
func (b *bench) setup(ctx context.Context) error {
	c := b.cluster
	if err := c.InstallPrerequisites(ctx, b.root, fixtures.ControllerNamespace, fixtures.PlaceholderPriorityClass); err != nil {
		return err
	}
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workloadNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for i := range b.cfg.pools {
		np := fixtures.NodePool(poolName(i), "4")
		np.Labels = map[string]string{selectorLabel: "true"}
		np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("720h")
		np.Spec.Disruption = karpv1.Disruption{
			ConsolidationPolicy: karpv1.ConsolidationPolicyWhenEmpty,
			ConsolidateAfter:    karpv1.MustParseNillableDuration("Never"),
			Budgets:             []karpv1.Budget{{Nodes: "0"}},
		}
		np.Spec.Limits = karpv1.Limits{corev1.ResourceCPU: resource.MustParse("1000000")}
		if err := c.Client.Create(ctx, np); err != nil {
			return fmt.Errorf("NodePool %s: %w", np.Name, err)
		}
	}
	closedDay := []v1alpha1.Weekday{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}[(int(time.Now().UTC().Weekday())+3)%7]
	pol := &v1alpha1.RotationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "scale"},
		Spec: v1alpha1.RotationPolicySpec{
			NodePoolSelector:   metav1.LabelSelector{MatchLabels: map[string]string{selectorLabel: "true"}},
			AgeThreshold:       "24h",
			MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: []v1alpha1.Weekday{closedDay}, Start: "00:00", End: "01:00"}},
		},
	}
	if err := c.Client.Create(ctx, pol); err != nil {
		return fmt.Errorf("RotationPolicy: %w", err)
	}
	logf("%d NodePools, RotationPolicy %q (window %s 00:00-01:00 UTC: closed)", b.cfg.pools, pol.Name, closedDay)
	// Pods are refused until the namespace's default ServiceAccount exists.
	return poll(ctx, 60*time.Second, "default ServiceAccount of "+workloadNS, func() (bool, error) {
		err := c.Client.Get(ctx, types.NamespacedName{Namespace: workloadNS, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, client.IgnoreNotFound(err)
	})
}

func poll(ctx context.Context, limit time.Duration, what string, f func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := f()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not done after %s", what, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// parallel runs f(i) for i in [from, to) on n workers and returns the
// first error.
func parallel(ctx context.Context, n, from, to int, f func(int) error) error {
	var next atomic.Int64
	next.Store(int64(from))
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= to || ctx.Err() != nil {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					next.Store(int64(to))
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// nodeClaim is what Karpenter's provisioner would create for a 4-core kwok
// node in pool: the pool's label and requirements, one instance type, the
// requests of the Pods it is for.
func nodeClaim(name, pool string, pods int) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: pool}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool}},
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{instanceType}},
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}},
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
			},
			Resources: karpv1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(100*pods), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(int64(pods)*64<<20, resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(int64(pods), resource.DecimalSI),
			}},
			ExpireAfter: karpv1.MustParseNillableDuration("720h"),
		},
	}
}

// fill grows the cluster to nodes NodeClaims (Karpenter's kwok provider
// launches a Node for each, kwok makes it Ready) and pods Pods bound to
// those Nodes by spec.nodeName (kwok marks them Running), then gives every
// claim the churn condition so the churn later only changes it. Timings go
// to rows when not nil.
func (b *bench) fill(ctx context.Context, nodes, pods int, rows map[string]string) error {
	from := len(b.claims)
	if b.nodeOf == nil {
		b.nodeOf = map[string]string{}
	}
	perNode := func(i int) int { // pods of node i: pods spread evenly over nodes
		return pods*(i+1)/nodes - pods*i/nodes
	}
	names := make([]string, nodes)
	for i := range nodes {
		names[i] = fmt.Sprintf("scale-%05d", i)
	}
	t0 := time.Now()
	logf("creating NodeClaims %d..%d across %d pools", from, nodes-1, b.cfg.pools)
	err := parallel(ctx, b.cfg.workers, from, nodes, func(i int) error {
		err := b.fast.Create(ctx, nodeClaim(names[i], poolName(i%b.cfg.pools), max(perNode(i), 1)))
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("creating NodeClaims: %w", err)
	}
	created := time.Since(t0)
	logf("%d NodeClaims created in %s; waiting for Karpenter to launch, register and initialize them", nodes-from, created.Round(time.Millisecond))
	err = poll(ctx, 20*time.Minute, "NodeClaims initialized", func() (bool, error) {
		list := &karpv1.NodeClaimList{}
		if err := b.fast.List(ctx, list); err != nil {
			return false, err
		}
		ready := 0
		for _, nc := range list.Items {
			if nc.Status.NodeName != "" && nc.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) {
				b.nodeOf[nc.Name] = nc.Status.NodeName
				ready++
			}
		}
		logf("  NodeClaims initialized: %d/%d", ready, nodes)
		return ready >= nodes, nil
	})
	if err != nil {
		return err
	}
	initialized := time.Since(t0)
	b.claims = names

	t1 := time.Now()
	podFrom := pods * from / nodes
	logf("creating Pods %d..%d bound to their Nodes", podFrom, pods-1)
	nodeOfPod := make([]int, pods)
	for i, k := 0, 0; i < nodes; i++ {
		for range perNode(i) {
			nodeOfPod[k] = i
			k++
		}
	}
	err = parallel(ctx, b.cfg.workers, podFrom, pods, func(k int) error {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-%06d", k), Namespace: workloadNS, Labels: map[string]string{"app": "scale"}},
			Spec: corev1.PodSpec{
				NodeName:                     b.nodeOf[names[nodeOfPod[k]]],
				AutomountServiceAccountToken: ptr.To(false),
				Containers: []corev1.Container{{
					Name: "app", Image: fixtures.PauseImage,
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
					}},
				}},
			},
		}
		err := b.fast.Create(ctx, p)
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("creating Pods: %w", err)
	}
	podsCreated := time.Since(t1)
	logf("%d Pods created in %s; waiting for kwok to run them", pods-podFrom, podsCreated.Round(time.Millisecond))
	err = poll(ctx, 20*time.Minute, "Pods Running", func() (bool, error) {
		running, total := 0, 0
		list := &corev1.PodList{}
		opts := []client.ListOption{client.InNamespace(workloadNS), client.Limit(5000)}
		for {
			if err := b.fast.List(ctx, list, opts...); err != nil {
				return false, err
			}
			for _, p := range list.Items {
				total++
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			if list.Continue == "" {
				break
			}
			opts = []client.ListOption{client.InNamespace(workloadNS), client.Limit(5000), client.Continue(list.Continue)}
		}
		logf("  Pods Running: %d/%d", running, pods)
		return running >= pods, nil
	})
	if err != nil {
		return err
	}
	podsRunning := time.Since(t1)

	t2 := time.Now()
	var failed atomic.Int64
	if err := parallel(ctx, b.cfg.workers, from, nodes, func(i int) error {
		if err := b.churn(ctx, names[i], 0); err != nil {
			failed.Add(1)
		}
		return nil
	}); err != nil {
		return err
	}
	if failed.Load() > 0 {
		return fmt.Errorf("%d NodeClaims refused the churn condition", failed.Load())
	}
	logf("churn condition set on %d NodeClaims in %s", nodes-from, time.Since(t2).Round(time.Millisecond))
	if rows != nil {
		n := nodes - from
		rows["claims"] = fmt.Sprintf("%d NodeClaims created in %.1f s (%.0f/s); all launched, registered and initialized after %.1f s", n, created.Seconds(), float64(n)/created.Seconds(), initialized.Seconds())
		rows["pods"] = fmt.Sprintf("%d Pods created in %.1f s (%.0f/s); all Running after %.1f s", pods-podFrom, podsCreated.Seconds(), float64(pods-podFrom)/podsCreated.Seconds(), podsRunning.Seconds())
	}
	return nil
}

// churn sets the BenchmarkChurn condition's message (and its
// lastTransitionTime) on a claim by server-side apply of that one list-map
// entry: a status-only change no other writer owns, which Karpenter's
// merge patches of status keep.
func (b *bench) churn(ctx context.Context, name string, seq int) error {
	body, _ := json.Marshal(map[string]any{
		"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
		"metadata": map[string]any{"name": name},
		"status": map[string]any{"conditions": []map[string]any{{
			"type": churnType, "status": "True", "reason": "Churn",
			"message": fmt.Sprintf("update %d", seq), "lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}}},
	})
	nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}}
	return b.fast.Status().Patch(ctx, nc, client.RawPatch(types.ApplyPatchType, body), client.FieldOwner(churnOwner), client.ForceOwnership)
}

// sample is one reading of the controller process.
type sample struct {
	rss, anon, file, hwm int64 // KiB
	heapInuse            float64
	cpuTicks             int64
}

func readProc(pid int) (sample, error) {
	var s sample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, l := range strings.Split(string(status), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			s.rss = v
		case "RssAnon:":
			s.anon = v
		case "RssFile:":
			s.file = v
		case "VmHWM:":
			s.hwm = v
		}
	}
	s.cpuTicks, err = cpuTicks(pid)
	return s, err
}

// cpuTicks is utime+stime of pid in clock ticks. The command name (field
// 2) may hold spaces; the fields after its closing parenthesis start at
// field 3 (state), so utime and stime (14 and 15) are its 12th and 13th.
func cpuTicks(pid int) (int64, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	rest := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(rest) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	u, err1 := strconv.ParseInt(rest[11], 10, 64)
	s, err2 := strconv.ParseInt(rest[12], 10, 64)
	return u + s, errors.Join(err1, err2)
}

// metrics reads the controller's /metrics and sums, per metric name, the
// series whose label text contains every string in match[name].
func metrics(port int) (map[string]float64, error) {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("/metrics: %s %s", resp.Status, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err != nil {
			continue
		}
		series := line[:sp]
		name := series
		if i := strings.IndexByte(series, '{'); i >= 0 {
			name = series[:i]
		}
		out[name] += v
		switch {
		case name == "controller_runtime_reconcile_total" && strings.Contains(series, `controller="nodepool-rotation"`):
			out["nodepool_reconcile_total"] += v
		case name == "workqueue_depth":
			out["workqueue_depth_all"] += v
		}
	}
	return out, sc.Err()
}

// result is what one controller run measured.
type result struct {
	label                string
	claims               int
	startCPU             float64 // s of CPU from start to settled
	settledAfter         time.Duration
	rss, anon, file, hwm int64 // KiB, medians of the settle window (hwm: the last)
	heap                 float64
	idleCPU              float64 // s of CPU per s of wall
	idleReqs             float64 // API requests per s at idle
	churnUpdates         int64
	churnFailed          int64
	churnCPU             float64 // s of CPU in the window
	churnPasses          float64
	churnReqs            float64
	churnWall            time.Duration
}

func (b *bench) measure(ctx context.Context, bin, kubeconfig, label string) (*result, error) {
	ports, err := process.FreePorts(2)
	if err != nil {
		return nil, err
	}
	args := []string{"-kubeconfig", kubeconfig, "-namespace", fixtures.ControllerNamespace,
		"-placeholder-priority-class", fixtures.PlaceholderPriorityClass, "-leader-elect=false", "-log-format=json",
		fmt.Sprintf("-metrics-bind-address=127.0.0.1:%d", ports[0]), "-metrics-secure=false",
		fmt.Sprintf("-health-probe-bind-address=127.0.0.1:%d", ports[1])}
	t0 := time.Now()
	p, err := process.Start(bin, filepath.Join(b.cfg.clusterDir, "controller"), label, args...)
	if err != nil {
		return nil, err
	}
	b.ctrl = p
	defer func() {
		p.Stop(15 * time.Second)
		b.ctrl = nil
	}()
	r := &result{label: label, claims: len(b.claims)}
	logf("%s: controller pid %d (log %s), %d NodeClaims", label, p.Pid(), p.Log, len(b.claims))
	exited := func() error {
		if p.Exited() {
			return fmt.Errorf("the controller exited (%v); log tail:\n%s", p.ExitErr(), p.Tail(4000))
		}
		return nil
	}
	err = poll(ctx, 3*time.Minute, label+": controller ready", func() (bool, error) {
		if err := exited(); err != nil {
			return false, err
		}
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]))
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return nil, err
	}
	// Settled: every pool reconciled and no reconcile for 10 s, queues empty.
	var last float64 = -1
	var quietSince time.Time
	err = poll(ctx, 5*time.Minute, label+": controller settled", func() (bool, error) {
		if err := exited(); err != nil {
			return false, err
		}
		m, err := metrics(ports[0])
		if err != nil {
			return false, nil
		}
		n := m["nodepool_reconcile_total"]
		if n != last || m["workqueue_depth_all"] > 0 || n < float64(b.cfg.pools) {
			last, quietSince = n, time.Now()
			return false, nil
		}
		return time.Since(quietSince) >= 10*time.Second, nil
	})
	if err != nil {
		return nil, err
	}
	r.settledAfter = time.Since(t0)
	s, err := readProc(p.Pid())
	if err != nil {
		return nil, err
	}
	r.startCPU = float64(s.cpuTicks) / clkTck
	logf("%s: settled after %s, %.2f s CPU since start", label, r.settledAfter.Round(time.Second), r.startCPU)

	var rss, anon, file []int64
	var heap []float64
	n := max(int(b.cfg.settle/(5*time.Second)), 1)
	for i := range n {
		if i > 0 {
			if err := sleep(ctx, 5*time.Second); err != nil {
				return nil, err
			}
		}
		s, err := readProc(p.Pid())
		if err != nil {
			return nil, err
		}
		m, err := metrics(ports[0])
		if err != nil {
			return nil, err
		}
		rss, anon, file, heap = append(rss, s.rss), append(anon, s.anon), append(file, s.file), append(heap, m["go_memstats_heap_inuse_bytes"])
		r.hwm = s.hwm
	}
	r.rss, r.anon, r.file, r.heap = median(rss), median(anon), median(file), median(heap)
	logf("%s: RSS %d KiB (anon %d, file %d), peak %d KiB, heap in use %.1f MiB", label, r.rss, r.anon, r.file, r.hwm, r.heap/(1<<20))

	{ // Idle: nothing changes in the cluster but kwok's heartbeats.
		m0, err := metrics(ports[0])
		if err != nil {
			return nil, err
		}
		c0, _ := cpuTicks(p.Pid())
		w0 := time.Now()
		if err := sleep(ctx, b.cfg.idle); err != nil {
			return nil, err
		}
		c1, _ := cpuTicks(p.Pid())
		m1, err := metrics(ports[0])
		if err != nil {
			return nil, err
		}
		wall := time.Since(w0).Seconds()
		r.idleCPU = float64(c1-c0) / clkTck / wall
		r.idleReqs = (m1["rest_client_requests_total"] - m0["rest_client_requests_total"]) / wall
		logf("%s: idle %.0f s: %.3f s CPU (%.2f%% of a core), %.2f API requests/s", label, wall, float64(c1-c0)/clkTck, 100*r.idleCPU, r.idleReqs)
	}

	// The churn: status-only updates of the claims, round robin, at a fixed
	// rate.
	m0, err := metrics(ports[0])
	if err != nil {
		return nil, err
	}
	c0, _ := cpuTicks(p.Pid())
	w0 := time.Now()
	total := int(float64(b.cfg.churnRate) * b.cfg.churnWindow.Seconds())
	tick := time.NewTicker(time.Second / time.Duration(b.cfg.churnRate))
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	sem := make(chan struct{}, 32)
	for i := range total {
		select {
		case <-ctx.Done():
			tick.Stop()
			wg.Wait()
			return nil, ctx.Err()
		case <-tick.C:
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := b.churn(ctx, b.claims[i%len(b.claims)], i+1); err != nil {
				failed.Add(1)
			} else {
				ok.Add(1)
			}
		})
	}
	tick.Stop()
	wg.Wait()
	// Let the last updates' passes run before reading the CPU.
	_ = poll(ctx, 30*time.Second, "queue drained", func() (bool, error) {
		m, err := metrics(ports[0])
		return err == nil && m["workqueue_depth_all"] == 0, nil
	})
	if err := sleep(ctx, 2*time.Second); err != nil {
		return nil, err
	}
	c1, _ := cpuTicks(p.Pid())
	m1, err := metrics(ports[0])
	if err != nil {
		return nil, err
	}
	r.churnWall = time.Since(w0)
	r.churnUpdates, r.churnFailed = ok.Load(), failed.Load()
	r.churnCPU = float64(c1-c0) / clkTck
	r.churnPasses = m1["nodepool_reconcile_total"] - m0["nodepool_reconcile_total"]
	r.churnReqs = m1["rest_client_requests_total"] - m0["rest_client_requests_total"]
	logf("%s: churn %d updates (%d failed) in %s: %.2f s CPU, %.0f passes, %.0f API requests", label, r.churnUpdates, r.churnFailed, r.churnWall.Round(time.Millisecond), r.churnCPU, r.churnPasses, r.churnReqs)
	if err := exited(); err != nil {
		return nil, err
	}
	return r, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func median[T int64 | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func mib(kib int64) string { return fmt.Sprintf("%.1f", float64(kib)/1024) }

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func (b *bench) report(base, scale *result, fill map[string]string, kubeconfig string) {
	// CPU per update: all the window's CPU, and net of what the same
	// controller spends at idle over as long.
	perUpdate := func(r *result) string {
		if r.churnUpdates == 0 {
			return "-"
		}
		net := r.churnCPU - r.idleCPU*r.churnWall.Seconds()
		return fmt.Sprintf("%.2f (%.2f net of idle)", 1000*r.churnCPU/float64(r.churnUpdates), 1000*net/float64(r.churnUpdates))
	}
	n := scale.claims - base.claims
	slope := float64(scale.anon-base.anon) / float64(n)
	rows := []row{
		{"NodeClaims (= Nodes)", strconv.Itoa(base.claims), strconv.Itoa(scale.claims)},
		{"Pods", strconv.Itoa(b.podsFor(base.claims)), strconv.Itoa(b.cfg.pods)},
		{"NodePools", strconv.Itoa(b.cfg.pools), strconv.Itoa(b.cfg.pools)},
		{"start to settled (s)", fmt.Sprintf("%.0f", base.settledAfter.Seconds()), fmt.Sprintf("%.0f", scale.settledAfter.Seconds())},
		{"CPU from start to settled (s)", fmt.Sprintf("%.2f", base.startCPU), fmt.Sprintf("%.2f", scale.startCPU)},
		{"VmRSS (MiB)", mib(base.rss), mib(scale.rss)},
		{"RssAnon (MiB)", mib(base.anon), mib(scale.anon)},
		{"RssFile (MiB)", mib(base.file), mib(scale.file)},
		{"VmHWM, peak RSS (MiB)", mib(base.hwm), mib(scale.hwm)},
		{"go_memstats_heap_inuse_bytes (MiB)", fmt.Sprintf("%.1f", base.heap/(1<<20)), fmt.Sprintf("%.1f", scale.heap/(1<<20))},
		{"idle CPU (% of a core)", fmt.Sprintf("%.2f", 100*base.idleCPU), fmt.Sprintf("%.2f", 100*scale.idleCPU)},
		{"idle API requests (/s)", fmt.Sprintf("%.2f", base.idleReqs), fmt.Sprintf("%.2f", scale.idleReqs)},
		{"churn: status updates (rate/s, failed)", fmt.Sprintf("%d (%d/s, %d failed)", base.churnUpdates, b.cfg.churnRate, base.churnFailed), fmt.Sprintf("%d (%d/s, %d failed)", scale.churnUpdates, b.cfg.churnRate, scale.churnFailed)},
		{"churn: CPU in the window (s)", fmt.Sprintf("%.2f", base.churnCPU), fmt.Sprintf("%.2f", scale.churnCPU)},
		{"churn: CPU per update (ms)", perUpdate(base), perUpdate(scale)},
		{"churn: passes per update", fmt.Sprintf("%.2f", base.churnPasses/float64(max(base.churnUpdates, 1))), fmt.Sprintf("%.2f", scale.churnPasses/float64(max(scale.churnUpdates, 1)))},
		{"churn: API requests per update", fmt.Sprintf("%.2f", base.churnReqs/float64(max(base.churnUpdates, 1))), fmt.Sprintf("%.2f", scale.churnReqs/float64(max(scale.churnUpdates, 1)))},
	}
	host, _ := os.Hostname()
	fmt.Println()
	fmt.Println("== fleet scale (make bench-scale) ==")
	fmt.Printf("date:     %s\n", b.start.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Printf("machine:  %d CPUs (nproc), %s, %s %s/%s, host %s\n", runtime.NumCPU(), cpuModel(), runtime.Version(), runtime.GOOS, runtime.GOARCH, host)
	fmt.Printf("command:  go run -tags scale ./test/scale %s (controller %s)\n", strings.Join(os.Args[1:], " "), b.bin)
	fmt.Printf("settings: -nodes %d -pods %d -pools %d -settle %s -idle %s -churn-rate %d -churn-window %s\n",
		b.cfg.nodes, b.cfg.pods, b.cfg.pools, b.cfg.settle, b.cfg.idle, b.cfg.churnRate, b.cfg.churnWindow)
	fmt.Printf("cluster:  %s (kubeconfig %s), nodes Ready at once (NODE_BOOT_DELAY_MS=0)\n", b.cfg.clusterDir, kubeconfig)
	for _, r := range b.rows {
		fmt.Printf("%s: %s\n", r.what, r.base)
	}
	fmt.Printf("fill:     %s\n          %s\n", fill["claims"], fill["pods"])
	fmt.Println()
	fmt.Printf("| figure | %d nodes | %d nodes |\n|---|---|---|\n", base.claims, scale.claims)
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s |\n", r.what, r.base, r.scale)
	}
	fmt.Println()
	fmt.Printf("slope: (RssAnon at %d − RssAnon at %d) / %d added node+claim pairs = %.1f KiB per node+claim\n", scale.claims, base.claims, n, slope)
	fmt.Printf("       heap in use: %.1f KiB per node+claim\n", (scale.heap-base.heap)/1024/float64(n))
	fmt.Printf("total wall time: %s\n", time.Since(b.start).Round(time.Second))
}
