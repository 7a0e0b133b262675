package inspect

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// controllerDeployments are the controller's Deployments in namespace, as
// the chart labels them: app.kubernetes.io/part-of (which nameOverride
// leaves alone) or, from charts before it, app.kubernetes.io/name.
func controllerDeployments(ctx context.Context, api client.Reader, namespace string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("apps/v1")
	list.SetKind("DeploymentList")
	if err := api.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("reading the controller's Deployment in %s: %w", namespace, err)
	}
	var out []unstructured.Unstructured
	for _, d := range list.Items {
		l := d.GetLabels()
		if l["app.kubernetes.io/part-of"] == appName || l["app.kubernetes.io/name"] == appName {
			out = append(out, d)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Deployment labelled app.kubernetes.io/part-of or app.kubernetes.io/name=%s in %s", appName, namespace)
	}
	return out, nil
}

const appName = "node-rotation-controller"

// capFlag is the --max-concurrent-rotations of the controller binary.
const capFlag = "max-concurrent-rotations"

// ControllerCap is the cluster cap the running controller uses: the
// -max-concurrent-rotations argument of its Deployment in namespace (0,
// no cap, when the argument is absent), so status and explain judge the
// clusterCap gate as the controller does without a flag of their own
// (docs/operations.md#status). It reads the Deployment as unstructured:
// rotationctl needs no apps/v1 types for one argument.
func ControllerCap(ctx context.Context, api client.Reader, namespace string) (int, error) {
	deployments, err := controllerDeployments(ctx, api, namespace)
	if err != nil {
		return 0, err
	}
	caps := map[int][]string{}
	for _, d := range deployments {
		n, err := CapOf(d)
		if err != nil {
			return 0, fmt.Errorf("Deployment %s/%s: %w", namespace, d.GetName(), err)
		}
		caps[n] = append(caps[n], d.GetName())
	}
	if len(caps) > 1 {
		return 0, fmt.Errorf("the controller Deployments in %s disagree on -%s: %v", namespace, capFlag, caps)
	}
	for n := range caps {
		return n, nil
	}
	return 0, nil
}

// CapOf reads -max-concurrent-rotations from the Deployment's containers'
// args, in any of the forms Go's flag package accepts: -name=N, --name=N,
// -name N.
func CapOf(d unstructured.Unstructured) (int, error) {
	value, ok, err := argOf(d, capFlag, false)
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("-%s=%q is not a non-negative integer", capFlag, value)
	}
	return n, nil
}

// pullSecretsFlag is the controller's -prepull-use-pull-secrets.
const pullSecretsFlag = "prepull-use-pull-secrets"

// ControllerPullSecrets reports whether a running controller Deployment in
// namespace has -prepull-use-pull-secrets: its pre-pull Pods may then be
// in every namespace, and rotationctl's cache looks for them there as the
// controller's does.
func ControllerPullSecrets(ctx context.Context, api client.Reader, namespace string) (bool, error) {
	deployments, err := controllerDeployments(ctx, api, namespace)
	if err != nil {
		return false, err
	}
	for _, d := range deployments {
		value, ok, err := argOf(d, pullSecretsFlag, true)
		if err != nil {
			return false, fmt.Errorf("Deployment %s/%s: %w", namespace, d.GetName(), err)
		}
		if on, _ := strconv.ParseBool(value); ok && on {
			return true, nil
		}
	}
	return false, nil
}

// argOf is the value of the flag name among the Deployment's containers'
// args, in the forms Go's flag package accepts (-name=V, --name=V, and
// -name V, or for a boolean flag -name alone, which is true); as there,
// the last one given wins.
func argOf(d unstructured.Unstructured, name string, boolean bool) (value string, found bool, err error) {
	containers, _, err := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return "", false, fmt.Errorf("reading its containers: %w", err)
	}
	for _, c := range containers {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		args, _, _ := unstructured.NestedStringSlice(m, "args")
		for i, a := range args {
			flagName, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			switch {
			case !strings.HasPrefix(a, "-") || flagName != name:
				continue
			case hasValue:
				value = v
			case boolean:
				value = "true"
			case i+1 >= len(args):
				return "", false, fmt.Errorf("-%s has no value", name)
			default:
				value = args[i+1]
			}
			found = true
		}
	}
	return value, found, nil
}
