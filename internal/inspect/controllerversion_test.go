package inspect

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func withImages(d *unstructured.Unstructured, images ...string) *unstructured.Unstructured {
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	for i := range containers {
		containers[i].(map[string]any)["image"] = images[i]
	}
	_ = unstructured.SetNestedSlice(d.Object, containers, "spec", "template", "spec", "containers")
	return d
}

// version reads the chart's version label and the controller container's
// image (not the sidecar's), for each controller Deployment of the namespace.
func TestControllerVersions(t *testing.T) {
	labelled := map[string]any{"app.kubernetes.io/name": "node-rotation-controller", "app.kubernetes.io/version": "0.2.0"}
	api := fake.NewClientBuilder().WithObjects(
		withImages(deployment("nrc", "ops", labelled), "proxy:1", "ghcr.io/noderotation/node-rotation-controller@sha256:abc"),
		withImages(deployment("old", "ops", chartLabels), "proxy:1", "ghcr.io/noderotation/node-rotation-controller:0.1.0"),
		withImages(deployment("else", "elsewhere", labelled), "proxy:1", "x:1"),
	).Build()
	got, err := ControllerVersions(t.Context(), api, "ops")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, i := range got {
		lines = append(lines, i.String())
	}
	slices.Sort(lines)
	want := []string{
		"0.2.0 (Deployment ops/nrc, image ghcr.io/noderotation/node-rotation-controller@sha256:abc)",
		"unlabelled (Deployment ops/old, image ghcr.io/noderotation/node-rotation-controller:0.1.0)",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("versions:\n  %s\nwant\n  %s", strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
	}
	if _, err := ControllerVersions(t.Context(), api, "empty"); err == nil || !strings.Contains(err.Error(), "no Deployment labelled") {
		t.Errorf("an empty namespace: %v", err)
	}
}
