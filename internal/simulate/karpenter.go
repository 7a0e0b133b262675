package simulate

import (
	"context"
	"fmt"
	"time"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// terminationFinalizer is Karpenter's: a deleted claim stays, with its
// deletionTimestamp, until its drain ends.
const terminationFinalizer = "karpenter.sh/termination"

// karpenter plays Karpenter's part in one pool: it launches a NodeClaim for
// each pending placeholder (a launch may fail and be retried), drains and
// finalizes deleted claims, and force-expires a claim at its expireAfter,
// replacing its node as the provisioner would for the evicted Pods.
type karpenter struct {
	w *world
	n int // claims created, for names
	// placeholders seen pending, by name, each with the claim launched for it.
	placeholders map[string]string
	// deleting are the claims whose drain is under way.
	deleting map[string]bool
}

func (k *karpenter) now() time.Time { return k.w.sim.now }

// scan reacts to what the controller changed: new pending placeholders and
// newly deleted claims.
func (k *karpenter) scan(ctx context.Context) error {
	if k.placeholders == nil {
		k.placeholders, k.deleting = map[string]string{}, map[string]bool{}
	}
	pods := &corev1.PodList{}
	if err := k.w.api.List(ctx, pods, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing placeholders: %w", err)
	}
	present := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		present[p.Name] = true
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			continue
		}
		if _, seen := k.placeholders[p.Name]; !seen {
			name, err := k.provision(ctx, placeholderZone(p))
			if err != nil {
				return err
			}
			k.placeholders[p.Name] = name
		}
	}
	for name := range k.placeholders {
		if !present[name] {
			delete(k.placeholders, name)
		}
	}
	claims := &karpv1.NodeClaimList{}
	if err := k.w.api.List(ctx, claims); err != nil {
		return fmt.Errorf("listing NodeClaims: %w", err)
	}
	for i := range claims.Items {
		c := &claims.Items[i]
		k.w.books.sawClaim(c)
		if c.DeletionTimestamp != nil && !k.deleting[c.Name] {
			k.deleting[c.Name] = true
			k.drain(c)
		}
	}
	return nil
}

// placeholderZone is the zone the placeholder is pinned to, when it is.
func placeholderZone(p *corev1.Pod) string {
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, r := range t.MatchExpressions {
				if r.Key == corev1.LabelTopologyZone && r.Operator == corev1.NodeSelectorOpIn && len(r.Values) > 0 {
					return r.Values[0]
				}
			}
		}
	}
	return zones[0]
}

// provision creates a launching claim for a pending placeholder and
// schedules its launch.
func (k *karpenter) provision(ctx context.Context, zone string) (string, error) {
	c, err := k.create(ctx, zone, k.now(), true)
	if err != nil {
		return "", err
	}
	k.launch(c.Name, zone)
	return c.Name, nil
}

// launch schedules the end of a claim's launch: a failure deletes it and
// launches another; a success boots its node.
func (k *karpenter) launch(name, zone string) {
	spec := k.w.spec
	k.w.sim.after(k.w.sim.draw(spec.Launch), func(ctx context.Context) error {
		c, ok, err := k.live(ctx, name)
		if err != nil || !ok {
			return err
		}
		if spec.NeverLaunch || k.w.sim.chance(spec.LaunchFailureRate) {
			k.w.books.launchFailed(name)
			if err := k.w.api.Delete(ctx, c); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting the failed launch %s: %w", name, err)
			}
			if err := k.scan(ctx); err != nil {
				return err
			}
			if !k.awaited(name) {
				k.w.wake()
				return nil // the placeholder is gone: nothing left to provision for
			}
			next, err := k.create(ctx, zone, k.now(), true)
			if err != nil {
				return err
			}
			k.retarget(name, next.Name)
			k.launch(next.Name, zone)
			k.w.wake()
			return nil
		}
		k.w.sim.after(k.w.sim.draw(spec.Boot), func(ctx context.Context) error { return k.ready(ctx, name) })
		return nil
	})
}

// awaited reports a pending placeholder waiting on the claim.
func (k *karpenter) awaited(claim string) bool {
	for _, c := range k.placeholders {
		if c == claim {
			return true
		}
	}
	return false
}

// retarget points the placeholder waiting on one claim at its successor.
func (k *karpenter) retarget(from, to string) {
	for p, c := range k.placeholders {
		if c == from {
			k.placeholders[p] = to
		}
	}
}

// ready registers the claim's node, marks both Ready and binds the
// placeholder waiting on it, if it still waits.
func (k *karpenter) ready(ctx context.Context, name string) error {
	c, ok, err := k.live(ctx, name)
	if err != nil || !ok {
		return err
	}
	if err := k.register(ctx, c); err != nil {
		return err
	}
	for p, claim := range k.placeholders {
		if claim == name {
			if err := k.bind(ctx, p, c.Status.NodeName); err != nil {
				return err
			}
		}
	}
	k.w.wake()
	return nil
}

// live reads a claim that exists and is not being deleted.
func (k *karpenter) live(ctx context.Context, name string) (*karpv1.NodeClaim, bool, error) {
	c := &karpv1.NodeClaim{}
	if err := k.w.api.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("reading NodeClaim %s: %w", name, err)
	}
	return c, c.DeletionTimestamp == nil, nil
}

// bind schedules the placeholder on node and runs it (the scheduler's and
// the kubelet's part).
func (k *karpenter) bind(ctx context.Context, name, node string) error {
	p := &corev1.Pod{}
	if err := k.w.api.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
		return client.IgnoreNotFound(err)
	}
	if p.DeletionTimestamp != nil || p.Spec.NodeName != "" {
		return nil
	}
	p.Spec.NodeName = node
	if err := k.w.api.Update(ctx, p); err != nil {
		return fmt.Errorf("binding %s: %w", name, err)
	}
	p.Status.Phase = corev1.PodRunning
	if err := k.w.api.Status().Update(ctx, p); err != nil {
		return fmt.Errorf("running %s: %w", name, err)
	}
	return nil
}

// drain finalizes a deleted claim once its drain ends: at once when it
// never had a node, after the terminationGracePeriod when the drain is
// stuck, else after a drawn drain time.
func (k *karpenter) drain(c *karpv1.NodeClaim) {
	d := time.Duration(0)
	if c.Status.NodeName != "" {
		d = k.w.sim.draw(k.w.spec.Drain)
		if tgp := k.w.spec.TerminationGracePeriod.Duration; tgp > 0 && k.w.sim.chance(k.w.spec.StuckDrainRate) {
			k.w.books.stuckDrains++
			d = tgp
		}
	}
	name := c.Name
	k.w.sim.after(d, func(ctx context.Context) error { return k.finalize(ctx, name) })
}

// finalize deletes the claim's node and lifts the finalizer.
func (k *karpenter) finalize(ctx context.Context, name string) error {
	c := &karpv1.NodeClaim{}
	if err := k.w.api.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
		return client.IgnoreNotFound(err)
	}
	if n := c.Status.NodeName; n != "" {
		if err := k.w.api.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Node %s: %w", n, err)
		}
	}
	orig := c.DeepCopy()
	controllerutil.RemoveFinalizer(c, terminationFinalizer)
	if err := k.w.api.Patch(ctx, c, client.MergeFrom(orig)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("finalizing NodeClaim %s: %w", name, err)
	}
	delete(k.deleting, name)
	k.w.books.gone(name, k.now())
	k.w.wake()
	return nil
}

// expire is Karpenter's forceful expiration of a claim at its expireAfter.
func (k *karpenter) expire(ctx context.Context, name string) error {
	c, ok, err := k.live(ctx, name)
	if err != nil || !ok {
		return err
	}
	if err := k.w.api.Delete(ctx, c); err != nil {
		return client.IgnoreNotFound(err)
	}
	k.w.books.forceExpired(name, k.now())
	// The evicted Pods go pending and the provisioner launches a
	// replacement at once; its node is Ready after a launch and a boot.
	repl, err := k.create(ctx, c.Labels[corev1.LabelTopologyZone], k.now(), false)
	if err != nil {
		return err
	}
	k.w.sim.after(k.w.sim.draw(k.w.spec.Launch)+k.w.sim.draw(k.w.spec.Boot), func(ctx context.Context) error {
		r, ok, err := k.live(ctx, repl.Name)
		if err != nil || !ok {
			return err
		}
		k.w.wake()
		return k.register(ctx, r)
	})
	k.w.wake()
	return k.scan(ctx)
}

// create makes a NodeClaim created at t, launching (no node yet) when
// launching is set, and schedules its expiry.
func (k *karpenter) create(ctx context.Context, zone string, t time.Time, surge bool) (*karpv1.NodeClaim, error) {
	k.n++
	spec := k.w.spec
	e, _ := spec.expireAfter()
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name: claimName(spec.Name, k.n), CreationTimestamp: metav1.NewTime(t), Finalizers: []string{terminationFinalizer},
		Labels: map[string]string{karpv1.NodePoolLabelKey: spec.Name, corev1.LabelTopologyZone: zone},
	}}
	c.Spec.ExpireAfter = karpv1.NillableDuration{Duration: e}
	c.Spec.Requirements = []karpv1.NodeSelectorRequirementWithMinValues{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}}
	if tgp := spec.TerminationGracePeriod.Duration; tgp > 0 {
		c.Spec.TerminationGracePeriod = &metav1.Duration{Duration: tgp}
	}
	if err := k.w.api.Create(ctx, c); err != nil {
		return nil, fmt.Errorf("creating NodeClaim %s: %w", c.Name, err)
	}
	k.w.books.created(c, surge)
	if e != nil {
		name := c.Name
		k.w.sim.at(t.Add(*e), func(ctx context.Context) error { return k.expire(ctx, name) })
	}
	return c, nil
}

// createReady makes a claim with a Ready node, created at t.
func (k *karpenter) createReady(ctx context.Context, zone string, t time.Time, surge bool) (*karpv1.NodeClaim, error) {
	c, err := k.create(ctx, zone, t, surge)
	if err != nil {
		return nil, err
	}
	return c, k.register(ctx, c)
}

var allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}

// register creates the claim's Ready node and marks the claim Ready.
func (k *karpenter) register(ctx context.Context, c *karpv1.NodeClaim) error {
	zone := c.Labels[corev1.LabelTopologyZone]
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + c.Name, Labels: map[string]string{
		karpv1.NodePoolLabelKey: k.w.spec.Name, corev1.LabelHostname: "node-" + c.Name, corev1.LabelTopologyZone: zone,
		corev1.LabelArchStable: "amd64", karpv1.CapacityTypeLabelKey: "on-demand",
	}}, Spec: corev1.NodeSpec{ProviderID: "sim://" + c.Name}}
	if err := k.w.api.Create(ctx, node); err != nil {
		return fmt.Errorf("creating Node for %s: %w", c.Name, err)
	}
	now := metav1.NewTime(k.now())
	node.Status = corev1.NodeStatus{Allocatable: allocatable, Capacity: allocatable,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastTransitionTime: now}}}
	if err := k.w.api.Status().Update(ctx, node); err != nil {
		return fmt.Errorf("marking Node %s Ready: %w", node.Name, err)
	}
	c.Status = karpv1.NodeClaimStatus{NodeName: node.Name, ProviderID: node.Spec.ProviderID, Allocatable: allocatable, Capacity: allocatable}
	for _, t := range []string{"Launched", "Registered", "Initialized", "Ready"} {
		c.Status.Conditions = append(c.Status.Conditions, status.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, LastTransitionTime: now})
	}
	if err := k.w.api.Status().Update(ctx, c); err != nil {
		return fmt.Errorf("marking NodeClaim %s Ready: %w", c.Name, err)
	}
	return nil
}

// startedAt is the rotation start a claim carries, if any.
func startedAt(c *karpv1.NodeClaim) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, c.Annotations[v1alpha1.AnnotationStartedAt])
	return t, err == nil
}
