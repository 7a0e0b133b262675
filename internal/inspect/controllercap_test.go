package inspect

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func deployment(name, ns string, labels map[string]any, args ...string) *unstructured.Unstructured {
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	d := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": labels},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "sidecar", "args": []any{"-v=2"}},
			map[string]any{"name": "controller", "args": a},
		}}}},
	}}
	return d
}

var chartLabels = map[string]any{"app.kubernetes.io/name": "node-rotation-controller"}

// status reads the cap from the controller's Deployment: each form of the
// argument, its absence (no cap), and the failures it names.
func TestControllerCap(t *testing.T) {
	for _, c := range []struct {
		name string
		objs []client.Object
		want int
		err  string
	}{
		{"-name=N", []client.Object{deployment("nrc", "ops", chartLabels, "-leader-elect", "-max-concurrent-rotations=3")}, 3, ""},
		{"--name=N", []client.Object{deployment("nrc", "ops", chartLabels, "--max-concurrent-rotations=2")}, 2, ""},
		{"-name N", []client.Object{deployment("nrc", "ops", chartLabels, "-max-concurrent-rotations", "4", "-v=1")}, 4, ""},
		{"absent: no cap", []client.Object{deployment("nrc", "ops", chartLabels, "-leader-elect")}, 0, ""},
		{"two replicas' Deployments that agree", []client.Object{deployment("a", "ops", chartLabels, "-max-concurrent-rotations=2"), deployment("b", "ops", chartLabels, "-max-concurrent-rotations=2")}, 2, ""},
		{"no Deployment", []client.Object{deployment("nrc", "elsewhere", chartLabels, "-max-concurrent-rotations=3")}, 0, "no Deployment labelled"},
		{"renamed by nameOverride, found by part-of", []client.Object{deployment("nrc", "ops", map[string]any{"app.kubernetes.io/name": "rotator", "app.kubernetes.io/part-of": "node-rotation-controller"}, "-max-concurrent-rotations=5")}, 5, ""},
		{"another app's Deployment", []client.Object{deployment("nrc", "ops", map[string]any{"app.kubernetes.io/name": "other"}, "-max-concurrent-rotations=3")}, 0, "no Deployment labelled"},
		{"a bad value", []client.Object{deployment("nrc", "ops", chartLabels, "-max-concurrent-rotations=many")}, 0, `"many" is not a non-negative integer`},
		{"no value", []client.Object{deployment("nrc", "ops", chartLabels, "-max-concurrent-rotations")}, 0, "has no value"},
		{"disagreeing Deployments", []client.Object{deployment("a", "ops", chartLabels, "-max-concurrent-rotations=2"), deployment("b", "ops", chartLabels, "-max-concurrent-rotations=3")}, 0, "disagree"},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := fake.NewClientBuilder().WithObjects(c.objs...).Build()
			got, err := ControllerCap(t.Context(), api, "ops")
			switch {
			case c.err == "" && (err != nil || got != c.want):
				t.Errorf("cap %d, %v; want %d", got, err, c.want)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Errorf("error %v, want it to contain %q", err, c.err)
			}
		})
	}
}

// rotationctl caches the controller's Pods in every namespace when the
// controller runs with -prepull-use-pull-secrets, in each form a boolean
// flag takes.
func TestControllerPullSecrets(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want bool
	}{
		{"-name", []string{"-leader-elect", "-prepull-use-pull-secrets"}, true},
		{"-name=true", []string{"-prepull-use-pull-secrets=true"}, true},
		{"--name=true", []string{"--prepull-use-pull-secrets=true"}, true},
		{"-name=false", []string{"-prepull-use-pull-secrets=false"}, false},
		{"absent", []string{"-max-concurrent-rotations=3"}, false},
		{"a value the flag package refuses", []string{"-prepull-use-pull-secrets=maybe"}, false},
		{"the last one given wins, as in the flag package", []string{"-prepull-use-pull-secrets", "-prepull-use-pull-secrets=false"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			api := fake.NewClientBuilder().WithObjects(deployment("nrc", "ops", chartLabels, c.args...)).Build()
			if got, err := ControllerPullSecrets(t.Context(), api, "ops"); err != nil || got != c.want {
				t.Errorf("%v, %v; want %v", got, err, c.want)
			}
		})
	}
	if _, err := ControllerPullSecrets(t.Context(), fake.NewClientBuilder().Build(), "ops"); err == nil {
		t.Error("no Deployment: no error")
	}
}
