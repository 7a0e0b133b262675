package fakekarpenter

import (
	"context"
	"fmt"

	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// TerminationFinalizer is Karpenter's, so a deleted claim lingers with a
// deletionTimestamp until the harness finalizes it.
const TerminationFinalizer = "karpenter.sh/termination"

// Karpenter is the harness.
type Karpenter struct {
	Client client.Client
}

// Claim describes a NodeClaim to create with its Node.
type Claim struct {
	Pool, Name, Zone string
	CPU              string // allocatable CPU, e.g. "4"
	ExpireAfter      string // default 720h
	Taints           []corev1.Taint
	Annotations      map[string]string
}

// NodeName is the Node backing a claim created by the harness.
func NodeName(claim string) string { return "node-" + claim }

// LaunchClaim creates a NodeClaim as Karpenter does before the launch:
// no node, no status yet.
func (k *Karpenter) LaunchClaim(ctx context.Context, c Claim) (*karpv1.NodeClaim, error) {
	if c.ExpireAfter == "" {
		c.ExpireAfter = "720h"
	}
	nc := &karpv1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Labels: map[string]string{karpv1.NodePoolLabelKey: c.Pool}, Annotations: c.Annotations, Finalizers: []string{TerminationFinalizer}},
		Spec: karpv1.NodeClaimSpec{
			NodeClassRef: &karpv1.NodeClassReference{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"},
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{c.Zone}},
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"on-demand"}},
			},
			ExpireAfter: karpv1.MustParseNillableDuration(c.ExpireAfter),
			Taints:      c.Taints,
		},
	}
	if err := k.Client.Create(ctx, nc); err != nil {
		return nil, fmt.Errorf("creating NodeClaim %s: %w", c.Name, err)
	}
	return nc, nil
}

// CreateClaim creates a Ready NodeClaim and its Ready Node.
func (k *Karpenter) CreateClaim(ctx context.Context, c Claim) (*karpv1.NodeClaim, error) {
	if c.CPU == "" {
		c.CPU = "4"
	}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(c.CPU), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	nc, err := k.LaunchClaim(ctx, c)
	if err != nil {
		return nil, err
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: NodeName(c.Name), Labels: map[string]string{
			karpv1.NodePoolLabelKey: c.Pool, corev1.LabelHostname: NodeName(c.Name), corev1.LabelTopologyZone: c.Zone,
			corev1.LabelArchStable: "amd64", karpv1.CapacityTypeLabelKey: "on-demand",
		}},
		Spec: corev1.NodeSpec{ProviderID: "kwok://" + c.Name, Taints: c.Taints},
	}
	if err := k.Client.Create(ctx, node); err != nil {
		return nil, fmt.Errorf("creating Node for %s: %w", c.Name, err)
	}
	node.Status = corev1.NodeStatus{
		Allocatable: alloc, Capacity: alloc,
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	if err := k.Client.Status().Update(ctx, node); err != nil {
		return nil, fmt.Errorf("marking Node %s Ready: %w", node.Name, err)
	}
	status := karpv1.NodeClaimStatus{
		NodeName: node.Name, ProviderID: node.Spec.ProviderID, Allocatable: alloc, Capacity: alloc,
		Conditions: []status.Condition{
			{Type: "Launched", Status: metav1.ConditionTrue, Reason: "Launched", LastTransitionTime: metav1.Now()},
			{Type: "Registered", Status: metav1.ConditionTrue, Reason: "Registered", LastTransitionTime: metav1.Now()},
			{Type: "Initialized", Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: metav1.Now()},
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()},
		},
	}
	// The controller may annotate the claim meanwhile: retry on conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k.Client.Get(ctx, client.ObjectKeyFromObject(nc), nc); err != nil {
			return err
		}
		nc.Status = status
		return k.Client.Status().Update(ctx, nc)
	})
	if err != nil {
		return nil, fmt.Errorf("marking NodeClaim %s Ready: %w", c.Name, err)
	}
	return nc, nil
}

// RunPod creates a running workload Pod bound to node.
func (k *Karpenter) RunPod(ctx context.Context, ns, name, node, cpu string, mutate ...func(*corev1.Pod)) (*corev1.Pod, error) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
			Name: "app", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
	}
	for _, m := range mutate {
		m(p)
	}
	if err := k.Client.Create(ctx, p); err != nil {
		return nil, fmt.Errorf("creating Pod %s: %w", name, err)
	}
	p.Status.Phase = corev1.PodRunning
	return p, k.Client.Status().Update(ctx, p)
}

// Bind binds a Pod to node (the scheduler's part); it stays Pending.
func (k *Karpenter) Bind(ctx context.Context, p *corev1.Pod, node string) error {
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := k.Client.SubResource("binding").Create(ctx, p, binding); err != nil {
		return fmt.Errorf("binding %s to %s: %w", p.Name, node, err)
	}
	return nil
}

// BindAndRun binds a Pod to node and marks it Running (the kubelet's part).
func (k *Karpenter) BindAndRun(ctx context.Context, p *corev1.Pod, node string) error {
	if err := k.Bind(ctx, p, node); err != nil {
		return err
	}
	return k.SetPhase(ctx, p, corev1.PodRunning)
}

// SetPhase sets a Pod's phase (and PodScheduled when it is pending).
func (k *Karpenter) SetPhase(ctx context.Context, p *corev1.Pod, phase corev1.PodPhase) error {
	if err := k.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		return err
	}
	p.Status.Phase = phase
	return k.Client.Status().Update(ctx, p)
}

// Finalize completes a deleted claim's termination: its Node is deleted and
// the finalizer removed, so the claim disappears.
func (k *Karpenter) Finalize(ctx context.Context, name string) error {
	nc := &karpv1.NodeClaim{}
	if err := k.Client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
		return client.IgnoreNotFound(err)
	}
	if nc.DeletionTimestamp == nil {
		return fmt.Errorf("NodeClaim %s is not being deleted", name)
	}
	if err := k.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nc.Status.NodeName}}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Node of %s: %w", name, err)
	}
	orig := nc.DeepCopy()
	controllerutil.RemoveFinalizer(nc, TerminationFinalizer)
	return client.IgnoreNotFound(k.Client.Patch(ctx, nc, client.MergeFrom(orig)))
}
