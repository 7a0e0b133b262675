// Package preflight checks, before the first reconcile, what the controller
// cannot work without (docs/design.md#the-problem): the cluster serves
// karpenter.sh/v1 nodeclaims and nodepools, RBAC lets it read them, and the
// placeholder's PriorityClass exists and is negative. A failure is one clear
// sentence.
package preflight

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Check runs every preflight check and returns the first failure.
func Check(ctx context.Context, cfg *rest.Config, c client.Client, namespace, priorityClass string) error {
	if err := servesKarpenterV1(cfg); err != nil {
		return err
	}
	if err := canRead(ctx, c, namespace); err != nil {
		return err
	}
	return placeholderPriority(ctx, c, namespace, priorityClass)
}

func servesKarpenterV1(cfg *rest.Config) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("preflight: building a discovery client: %w", err)
	}
	list, err := dc.ServerResourcesForGroupVersion("karpenter.sh/v1")
	if err != nil {
		return fmt.Errorf("preflight: the cluster does not serve karpenter.sh/v1 (is Karpenter v1 installed?): %w", err)
	}
	served := map[string]bool{}
	for _, r := range list.APIResources {
		served[r.Name] = true
	}
	var missing []string
	for _, r := range []string{"nodeclaims", "nodepools"} {
		if !served[r] {
			missing = append(missing, r)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("preflight: karpenter.sh/v1 does not serve %s", strings.Join(missing, ", "))
	}
	return nil
}

// reads are the grants whose absence would stall the cache rather than
// fail a request: an informer that may not list or watch never syncs, and
// a pass reading that kind would wait on it. PodDisruptionBudgets are read
// only when a candidate's node has Pods (docs/design.md#drain-blockers),
// so a missing grant would show first as a stuck pool, long after start.
// The placeholder's Events are listed in the controller's namespace only
// when Karpenter has not served it for a minute (docs/design.md#fail-fast):
// without the grant no attempt could fail fast (a failed list counts as
// Karpenter saying nothing, and is logged on every such pass).
var reads = []struct {
	group, version, resource string
	verbs                    []string
	namespaced               bool // in the controller's namespace (the chart's Role)
}{
	{"karpenter.sh", "v1", "nodeclaims", []string{"get", "list", "watch"}, false},
	{"karpenter.sh", "v1", "nodepools", []string{"get", "list", "watch"}, false},
	{"policy", "v1", "poddisruptionbudgets", []string{"list", "watch"}, false},
	{"", "v1", "events", []string{"list"}, true},
}

// canRead asks the API server whether this identity may make the reads.
func canRead(ctx context.Context, c client.Client, namespace string) error {
	for _, r := range reads {
		name, ns, role := r.resource+"."+r.group, "", "ClusterRole"
		if r.group == "" {
			name = r.resource
		}
		if r.namespaced {
			ns, role = namespace, "Role"
			name += " in " + namespace
		}
		for _, verb := range r.verbs {
			ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: &authorizationv1.ResourceAttributes{Group: r.group, Version: r.version, Resource: r.resource, Verb: verb, Namespace: ns},
			}}
			if err := c.Create(ctx, ssar); err != nil {
				return fmt.Errorf("preflight: asking whether RBAC allows %s %s: %w", verb, name, err)
			}
			if !ssar.Status.Allowed {
				return fmt.Errorf("preflight: RBAC does not allow this controller to %s %s (grant the %s of the chart)", verb, name, role)
			}
		}
	}
	return nil
}

// placeholderPriority resolves the PriorityClass the way the placeholder will
// meet it — a dry-run create of a Pod naming it — so no permission on
// priorityclasses is needed
// (charts/node-rotation-controller/templates/rbac.yaml).
func placeholderPriority(ctx context.Context, c client.Client, namespace, priorityClass string) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "nrc-preflight-", Namespace: namespace},
		Spec: corev1.PodSpec{
			PriorityClassName: priorityClass,
			Containers:        []corev1.Container{{Name: "preflight", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
	err := c.Create(ctx, pod, client.DryRunAll)
	// A namespace created a moment ago (helm install --create-namespace)
	// may not have its default ServiceAccount yet: the ServiceAccount
	// admission plugin refuses a Pod until the controller-manager creates
	// it, seconds later. Seen in the chart-identity e2e, the controller
	// started 2 s after the namespace.
	for deadline := time.Now().Add(ServiceAccountWait); noServiceAccountYet(err) && time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return fmt.Errorf("preflight: waiting for the default ServiceAccount of %s: %w", namespace, ctx.Err())
		case <-time.After(ServiceAccountPoll):
		}
		pod.Spec.Priority, pod.Spec.PreemptionPolicy = nil, nil
		err = c.Create(ctx, pod, client.DryRunAll)
	}
	var status apierrors.APIStatus
	switch {
	case noServiceAccountYet(err):
		return fmt.Errorf("preflight: the namespace %s has no default ServiceAccount after %s (the controller-manager creates it; the placeholders run under it): %w", namespace, ServiceAccountWait, err)
	case err != nil && errors.As(err, &status) && strings.Contains(err.Error(), "PriorityClass"):
		return fmt.Errorf("preflight: the placeholder PriorityClass %q is missing (install it with the chart): %s", priorityClass, status.Status().Message)
	case err != nil:
		return fmt.Errorf("preflight: resolving the placeholder PriorityClass %q with a dry-run Pod in %s: %w", priorityClass, namespace, err)
	case pod.Spec.Priority == nil || *pod.Spec.Priority >= 0:
		return fmt.Errorf("preflight: the placeholder PriorityClass %q has priority %d; it must be negative so workloads preempt the placeholder", priorityClass, derefOr(pod.Spec.Priority))
	case pod.Spec.PreemptionPolicy == nil || *pod.Spec.PreemptionPolicy != corev1.PreemptNever:
		return fmt.Errorf("preflight: the placeholder PriorityClass %q must set preemptionPolicy: Never", priorityClass)
	}
	return nil
}

// ServiceAccountWait is how long the dry-run waits for a new namespace's
// default ServiceAccount, trying again every ServiceAccountPoll.
var ServiceAccountWait, ServiceAccountPoll = 30 * time.Second, 500 * time.Millisecond

// noServiceAccountYet: the ServiceAccount admission plugin refused the Pod
// because the namespace's ServiceAccount does not exist (yet).
func noServiceAccountYet(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "error looking up service account")
}

func derefOr(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
