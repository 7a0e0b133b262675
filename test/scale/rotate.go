//go:build scale

// Rotations at once: the per-rotation overhead over the provision+drain
// floor with one pool rotating, then with P pools rotating at the same
// time, on the fleet the benchmark filled (issue #13's last figure).

package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

const rotateLabel = "nrc-scale-rotate"

// rotateAge is the rotation policy's ageThreshold. The phase's claims are
// older than it when the policy is created; a pool leaves the policy (its
// label is removed) as soon as its originals are rotated, and its
// replacements stay younger than this until then, so only the originals
// rotate (the report notes any other rotation).
const rotateAge = 90 * time.Second

// rotationTimes is one rotation as the bench's own watch saw it (wall
// clock of delivery, so the same clock for every step).
type rotationTimes struct {
	pool, claim string
	start       time.Time // the policy's creation, or the pool's previous rotation's end
	placeholder time.Time // the placeholder Pod appeared
	surgeReady  time.Time // the placeholder Running on a Ready Node (surge.Ready), whichever came last
	deleting    time.Time // the old claim got its deletionTimestamp
	gone        time.Time // the old claim was deleted
}

// floor is what Karpenter and kwok take: provisioning the surge node until
// the placeholder runs on it Ready (what the controller waits for), and
// draining and terminating the old one.
func (r rotationTimes) floor() time.Duration {
	return r.surgeReady.Sub(r.placeholder) + r.gone.Sub(r.deleting)
}
func (r rotationTimes) wall() time.Duration     { return r.gone.Sub(r.start) }
func (r rotationTimes) overhead() time.Duration { return r.wall() - r.floor() }

// phase is one measurement: pools pools rotating perPool claims each.
type phase struct {
	pools, perPool int
	rotations      []rotationTimes
	requests       float64            // the controller's API requests over the phase
	passes         float64            // its NodePool passes
	passSeconds    float64            // the time those passes took, summed
	cpu            float64            // its CPU seconds over the phase
	machineBusy    float64            // the share of the machine's CPU time busy over the phase (all processes)
	components     map[string]float64 // CPU seconds of each cluster component over the phase
	wall           time.Duration
}

// rotations runs the single-pool phase and then the P-pool phase, each with
// a fresh controller on the full fleet.
func (b *bench) rotations(ctx context.Context, bin, kubeconfig string) ([]*phase, error) {
	var out []*phase
	for _, pools := range []int{1, b.cfg.rotatePools} {
		// One pool alone rotates twice as many claims, so its figure
		// rests on more than a couple of samples.
		perPool := b.cfg.rotatePerPool
		if pools == 1 {
			perPool *= 2
		}
		ph := &phase{pools: pools, perPool: perPool}
		if err := b.rotatePhase(ctx, bin, kubeconfig, ph); err != nil {
			return out, fmt.Errorf("rotating %d pools: %w", pools, err)
		}
		out = append(out, ph)
	}
	return out, nil
}

func rotPool(pools, i int) string        { return fmt.Sprintf("rot%02d-%02d", pools, i) }
func rotClaim(pool string, j int) string { return fmt.Sprintf("%s-%d", pool, j) }

func (b *bench) rotatePhase(ctx context.Context, bin, kubeconfig string, ph *phase) error {
	label := fmt.Sprintf("rotate-%d", ph.pools)
	defer b.removeRotationFleet(ctx, ph)
	originals, err := b.rotationFleet(ctx, ph)
	if err != nil {
		return err
	}
	p, ports, _, err := b.startController(ctx, bin, kubeconfig, label, nil)
	if err != nil {
		return err
	}
	defer func() {
		p.Stop(15 * time.Second)
		b.ctrl = nil
	}()
	// The fresh controller's first passes over the fleet's pools are not
	// the rotations' work.
	if err := b.settle(ctx, p, ports[0], label); err != nil {
		// a controller that never goes quiet cannot date the rotations'
		// own work apart from its background: the phase stops here
		return fmt.Errorf("%s: controller settled: %w", label, err)
	}
	rec, err := recorder.StartAtNow(b.cluster.Watcher)
	if err != nil {
		return err
	}
	defer rec.Stop()
	m0, err := metrics(ports[0])
	if err != nil {
		return err
	}
	c0, _ := cpuTicks(p.Pid())
	busy0, total0, _ := machineTicks()
	comp0 := componentTicks(b.cfg.clusterDir)
	pol := fixtures.Policy(label, rotateAge.String())
	if b.cfg.rotateAtOnce > 1 {
		pol.Spec.Surge.MaxUnavailable = ptr.To(intstr.FromInt(b.cfg.rotateAtOnce))
	}
	pol.Spec.NodePoolSelector = metav1.LabelSelector{MatchLabels: map[string]string{rotateLabel: strconv.Itoa(ph.pools)}}
	t0 := time.Now()
	if err := b.cluster.Client.Create(ctx, pol); err != nil {
		return fmt.Errorf("RotationPolicy %s: %w", label, err)
	}
	defer func() { _ = b.cluster.Client.Delete(context.Background(), pol) }()
	logf("%s: policy %s created; %d pools rotating %d claims each", label, pol.Name, ph.pools, ph.perPool)
	err = poll(ctx, 15*time.Minute, label+": every original claim rotated", func() (bool, error) {
		if err := p.exited(); err != nil {
			return false, err
		}
		return b.rotationsDone(ctx, originals)
	})
	if err != nil {
		return err
	}
	ph.wall = time.Since(t0)
	m1, err := metrics(ports[0])
	if err != nil {
		return err
	}
	c1, _ := cpuTicks(p.Pid())
	ph.cpu = float64(c1-c0) / clkTck
	ph.components = map[string]float64{}
	for name, t1 := range componentTicks(b.cfg.clusterDir) {
		if t0, ok := comp0[name]; ok {
			ph.components[name] = float64(t1-t0) / clkTck
		}
	}
	if busy1, total1, err := machineTicks(); err == nil && total1 > total0 {
		ph.machineBusy = float64(busy1-busy0) / float64(total1-total0)
	}
	ph.requests = m1["rest_client_requests_total"] - m0["rest_client_requests_total"]
	ph.passes = m1["nodepool_reconcile_total"] - m0["nodepool_reconcile_total"]
	ph.passSeconds = m1["nodepool_reconcile_seconds"] - m0["nodepool_reconcile_seconds"]
	// The watch may deliver the last records a moment after the poll saw
	// the claims gone.
	err = poll(ctx, 30*time.Second, label+": every rotation's records", func() (bool, error) {
		var err error
		ph.rotations, err = timesOf(rec, t0, originals, b.cfg.rotateAtOnce)
		return err == nil, nil
	})
	if err != nil {
		_, why := timesOf(rec, t0, originals, b.cfg.rotateAtOnce)
		return fmt.Errorf("%w: %v", err, why)
	}
	if extra := extraRotations(rec, originals); len(extra) > 0 {
		b.notes = append(b.notes, fmt.Sprintf("%s: replacements rotated during the phase too (%v): the figures carry their load", label, extra))
	}
	logf("%s: %d rotations in %s, %.0f API requests", label, len(ph.rotations), ph.wall.Round(time.Second), ph.requests)
	return nil
}

// rotationFleet creates the phase's pools (labelled for its policy, no
// consolidation) with perPool claims each and a Deployment of perPool
// 3-core replicas on them. It returns the claims, pool by pool, once their
// Nodes are initialized, the replicas run and the claims are older than
// the policy's ageThreshold.
func (b *bench) rotationFleet(ctx context.Context, ph *phase) (map[string][]string, error) {
	originals := map[string][]string{}
	created := time.Now()
	for i := range ph.pools {
		name := rotPool(ph.pools, i)
		np := fixtures.NodePool(name, "4")
		np.Labels[rotateLabel] = strconv.Itoa(ph.pools)
		np.Spec.Template.Spec.ExpireAfter = karpv1.MustParseNillableDuration("720h")
		if err := b.cluster.Client.Create(ctx, np); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("NodePool %s: %w", name, err)
		}
		for j := range ph.perPool {
			c := rotClaim(name, j)
			if err := b.fast.Create(ctx, nodeClaim(c, name, 1)); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("NodeClaim %s: %w", c, err)
			}
			originals[name] = append(originals[name], c)
		}
	}
	err := poll(ctx, 10*time.Minute, "rotation fleet initialized", func() (bool, error) {
		for _, claims := range originals {
			for _, c := range claims {
				nc := &karpv1.NodeClaim{}
				if err := b.fast.Get(ctx, client.ObjectKey{Name: c}, nc); err != nil {
					return false, client.IgnoreNotFound(err)
				}
				if nc.Status.NodeName == "" || !nc.StatusConditions().IsTrue(karpv1.ConditionTypeInitialized) {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	// A Deployment per pool, one 3-core replica per 4-core node: a
	// placeholder (3 cores) fits on no other node of the pool, and a
	// drained replica moves to the surge node, so every rotation
	// provisions a node rather than reusing the previous one's.
	for i := range ph.pools {
		pool := rotPool(ph.pools, i)
		app := map[string]string{"app": pool}
		if err := b.fast.Create(ctx, fixtures.Workload(workloadNS, pool, pool, int32(ph.perPool), "3", app)); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("Deployment %s: %w", pool, err)
		}
	}
	err = poll(ctx, 5*time.Minute, "rotation workloads running", func() (bool, error) {
		for i := range ph.pools {
			pool := rotPool(ph.pools, i)
			if n, err := fixtures.HealthyPods(ctx, b.fast, workloadNS, map[string]string{"app": pool}); err != nil || n < ph.perPool {
				return false, err
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	// Every claim is due once older than the policy's ageThreshold.
	if err := sleep(ctx, time.Until(created.Add(rotateAge+5*time.Second))); err != nil {
		return nil, err
	}
	if n, err := b.poolClaims(ctx, ph); err != nil || n != ph.pools*ph.perPool {
		return nil, fmt.Errorf("the rotation pools have %d claims, want %d (did Karpenter provision for the workload?): %v", n, ph.pools*ph.perPool, err)
	}
	logf("rotation fleet: %d pools × %d claims initialized, a 3-core replica on each node", ph.pools, ph.perPool)
	return originals, nil
}

// rotationsDone: every original claim is gone and no pool has a rotation
// in flight. A pool whose originals are done leaves the policy at once, so
// its replacements never come due while the other pools finish.
func (b *bench) rotationsDone(ctx context.Context, originals map[string][]string) (bool, error) {
	done := true
	for pool, claims := range originals {
		np := &karpv1.NodePool{}
		if err := b.fast.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
			return false, err
		}
		if _, governed := np.Labels[rotateLabel]; !governed {
			continue
		}
		finished := np.Annotations[v1alpha1.AnnotationActiveRotation] == ""
		for _, c := range claims {
			err := b.fast.Get(ctx, client.ObjectKey{Name: c}, &karpv1.NodeClaim{})
			if err == nil {
				finished = false
			} else if !apierrors.IsNotFound(err) {
				return false, err
			}
		}
		if !finished {
			done = false
			continue
		}
		patch := client.MergeFrom(np.DeepCopy())
		delete(np.Labels, rotateLabel)
		if err := b.fast.Patch(ctx, np, patch); err != nil {
			return false, fmt.Errorf("taking %s out of the policy: %w", pool, err)
		}
	}
	return done, nil
}

// poolClaims counts the claims of the phase's pools.
func (b *bench) poolClaims(ctx context.Context, ph *phase) (int, error) {
	n := 0
	for i := range ph.pools {
		list := &karpv1.NodeClaimList{}
		if err := b.fast.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: rotPool(ph.pools, i)}); err != nil {
			return 0, err
		}
		n += len(list.Items)
	}
	return n, nil
}

// timesOf reads each rotation's steps from the watch record. A pool's
// rotations run atOnce at a time (its maxUnavailable), in the order of
// their placeholders: the first atOnce start at t0 (the policy's
// creation), each next one when the claim of the one atOnce places before
// it is gone — its slot free again.
func timesOf(rec *recorder.Recorder, t0 time.Time, originals map[string][]string, atOnce int) ([]rotationTimes, error) {
	var out []rotationTimes
	for pool, claims := range originals {
		var pr []rotationTimes
		for _, c := range claims {
			r := rotationTimes{pool: pool, claim: c}
			name := surge.PlaceholderName(c)
			created, ok := rec.First("Pod", name, recorder.Added)
			if !ok {
				return nil, fmt.Errorf("no placeholder seen for %s", c)
			}
			r.placeholder = created.Seen
			bound, ok := rec.First("Pod", name, func(x recorder.Record) bool { return x.Obj.(*corev1.Pod).Spec.NodeName != "" })
			if !ok {
				return nil, fmt.Errorf("placeholder of %s never bound", c)
			}
			node := bound.Obj.(*corev1.Pod).Spec.NodeName
			ready, ok := rec.First("Node", node, nodeReady)
			if !ok {
				return nil, fmt.Errorf("surge node %s of %s never seen Ready", node, c)
			}
			running, ok := rec.First("Pod", name, func(x recorder.Record) bool { return x.Obj.(*corev1.Pod).Status.Phase == corev1.PodRunning })
			if !ok {
				return nil, fmt.Errorf("placeholder of %s never seen Running", c)
			}
			r.surgeReady = ready.Seen
			if running.Seen.After(r.surgeReady) {
				r.surgeReady = running.Seen
			}
			del, ok := rec.First("NodeClaim", c, recorder.Deleting)
			if !ok {
				return nil, fmt.Errorf("%s never seen deleting", c)
			}
			r.deleting = del.Seen
			gone, ok := rec.First("NodeClaim", c, recorder.Deleted)
			if !ok {
				return nil, fmt.Errorf("%s never seen deleted", c)
			}
			r.gone = gone.Seen
			pr = append(pr, r)
		}
		sort.Slice(pr, func(i, j int) bool { return pr[i].placeholder.Before(pr[j].placeholder) })
		for i := range pr {
			pr[i].start = t0
			if i >= atOnce {
				pr[i].start = pr[i-atOnce].gone
			}
		}
		out = append(out, pr...)
	}
	return out, nil
}

// extraRotations names the claims other than the originals a placeholder
// was created for while the phase ran.
func extraRotations(rec *recorder.Recorder, originals map[string][]string) []string {
	orig := map[string]bool{}
	for _, claims := range originals {
		for _, c := range claims {
			orig[c] = true
		}
	}
	var out []string
	for _, r := range rec.Sorted() {
		if c := r.Obj.GetLabels()[v1alpha1.LabelSurgeFor]; r.Kind == "Pod" && r.Type == watch.Added && c != "" && !orig[c] {
			out = append(out, c)
		}
	}
	return out
}

func nodeReady(rec recorder.Record) bool {
	n, ok := rec.Obj.(*corev1.Node)
	if !ok {
		return false
	}
	return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
}

// removeRotationFleet deletes the phase's claims, Pods and pools and waits
// for the claims to go, so the next phase and the report see the fleet as
// it was.
func (b *bench) removeRotationFleet(ctx context.Context, ph *phase) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	for i := range ph.pools {
		pool := rotPool(ph.pools, i)
		_ = b.fast.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: workloadNS, Name: pool}})
		_ = b.fast.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(workloadNS), client.MatchingLabels{"app": pool})
		_ = b.fast.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(fixtures.ControllerNamespace), client.MatchingLabels{v1alpha1.LabelNodePool: pool})
		_ = b.fast.DeleteAllOf(ctx, &karpv1.NodeClaim{}, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	}
	_ = poll(ctx, 5*time.Minute, "rotation fleet removed", func() (bool, error) {
		list := &karpv1.NodeClaimList{}
		if err := b.fast.List(ctx, list, client.HasLabels{karpv1.NodePoolLabelKey}); err != nil {
			return false, err
		}
		for _, c := range list.Items {
			if np := c.Labels[karpv1.NodePoolLabelKey]; len(np) > 3 && np[:3] == "rot" {
				return false, nil
			}
		}
		return true, nil
	})
	for i := range ph.pools {
		_ = b.fast.Delete(ctx, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: rotPool(ph.pools, i)}})
	}
}
