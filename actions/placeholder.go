package actions

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// placeholderEnsure creates the placeholder if it does not exist.
func placeholderEnsure(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	o := p.Obs
	if o.Placeholder != nil {
		return Result{Outcome: Done, Did: "placeholder exists"}, nil
	}
	if o.Subject == nil || o.Sizing == nil {
		return Result{}, fmt.Errorf("placeholder for %s: no claim or sizing observed", p.Claim())
	}
	pod := surge.Placeholder{
		Namespace: p.Namespace, PriorityClass: p.PlaceholderPriorityClass, Image: p.PlaceholderImage,
		Pool: o.Pool, Claim: o.Subject, OldNode: o.OldNode, Requests: o.Sizing.Requests,
		Required: o.Settings.Required, Preferred: o.Settings.Preferred, AvoidHostnames: o.AvoidHostnames,
	}.Build()
	if err := p.Client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return Result{}, fmt.Errorf("creating placeholder %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return Result{Outcome: Done, Did: "created placeholder " + pod.Name, Values: map[string]string{"placeholder": pod.Name}}, nil
}

// placeholderDelete deletes the placeholder immediately (grace period 0: it
// holds nothing but a reservation).
func placeholderDelete(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: surge.PlaceholderName(p.Claim())}}
	if p.Obs.Placeholder == nil {
		return Result{Outcome: Done, Did: "placeholder already gone"}, nil
	}
	if err := p.Client.Delete(ctx, pod, client.GracePeriodSeconds(0), client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
		return Result{}, fmt.Errorf("deleting placeholder %s: %w", pod.Name, err)
	}
	return Result{Outcome: Done, Did: "deleted placeholder " + pod.Name}, nil
}
