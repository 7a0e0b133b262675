//go:build scale

// The fleet: the pools, the policy, the NodeClaims and Pods the benchmark
// creates, and the status churn it drives.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
)

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
	return pollEvery(ctx, limit, 2*time.Second, what, f)
}

// fillWait is how long the fill waits for the fleet it created, and how
// often it looks. Karpenter took 27 minutes to initialize 5,000 claims on
// this machine, and a list of them every 2 s is itself enough load to time
// out on a two-core API server: both scale with the fleet.
func fillWait(nodes int) (limit, every time.Duration) {
	limit = max(20*time.Minute, 10*time.Minute+time.Duration(nodes)*300*time.Millisecond)
	every = max(2*time.Second, time.Duration(nodes)*3*time.Millisecond)
	return limit, every
}

// retryBusy runs write until it succeeds, fails for good, or the API
// server stayed busy through six tries, 62 s of waits between them (each
// try may itself take the server's 60 s timeout). The fill's workers
// back off together; the API server they wait for is one.
func retryBusy(ctx context.Context, write func() error) error {
	wait := 2 * time.Second
	for try := 1; ; try++ {
		err := write()
		if err == nil || try == 6 || !loaded(err) {
			return err
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		wait *= 2
	}
}

// busy tells a poll's read that failed because the API server is loaded
// (a timeout, a 429 or 503, a dropped connection) from one that failed for
// good: the first is logged and the poll tries again at its next look.
func busy(what string, err error) (bool, error) {
	if loaded(err) {
		logf("  %s: the API server is busy (%v); looking again", what, err)
		return false, nil
	}
	return false, err
}

// loaded: err is the API server being too busy to answer (a timeout, a
// 429 or 503, a reset connection or an HTTP/2 stream it gave up on), not
// a refusal: a refused connection or a bad certificate fails at once.
// The stream error has no type client-go exposes, so its text is matched
// (seen at 5,000 nodes: "stream error: … INTERNAL_ERROR").
func loaded(err error) bool {
	var netErr net.Error
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || (errors.As(err, &netErr) && netErr.Timeout()) ||
		utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) || strings.Contains(err.Error(), "stream error")
}

// errPollTimeout is pollEvery's error when limit passed before f was done.
var errPollTimeout = errors.New("not done")

// pollEvery calls f every interval until it is done, fails, or limit has
// passed.
func pollEvery(ctx context.Context, limit, every time.Duration, what string, f func() (bool, error)) error {
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
			return fmt.Errorf("%s: %w after %s", what, errPollTimeout, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
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
		err := retryBusy(ctx, func() error {
			return b.fast.Create(ctx, nodeClaim(names[i], poolName(i%b.cfg.pools), max(perNode(i), 1)))
		})
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
	limit, every := fillWait(nodes)
	err = pollEvery(ctx, limit, every, "NodeClaims initialized", func() (bool, error) {
		list := &karpv1.NodeClaimList{}
		if err := b.fast.List(ctx, list); err != nil {
			return busy("NodeClaims initialized", err)
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
		err := retryBusy(ctx, func() error { return b.fast.Create(ctx, p) })
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
	err = pollEvery(ctx, limit, every, "Pods Running", func() (bool, error) {
		running, total := 0, 0
		list := &corev1.PodList{}
		opts := []client.ListOption{client.InNamespace(workloadNS), client.Limit(5000)}
		for {
			if err := b.fast.List(ctx, list, opts...); err != nil {
				return busy("Pods Running", err)
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
		if err := retryBusy(ctx, func() error { return b.churn(ctx, names[i], 0) }); err != nil {
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
