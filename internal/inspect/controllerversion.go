package inspect

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Installed is one controller Deployment as `rotationctl version` reports
// it: the release the chart labelled it with and the image its controller
// container runs (a tag, a digest or both).
type Installed struct {
	Namespace, Name string
	Version         string // app.kubernetes.io/version, "" when unlabelled
	Image           string
}

func (i Installed) String() string {
	v := i.Version
	if v == "" {
		v = "unlabelled"
	}
	return fmt.Sprintf("%s (Deployment %s/%s, image %s)", v, i.Namespace, i.Name, i.Image)
}

// ControllerVersions lists the controller Deployments in namespace (those
// labelled as the chart labels them) with their versions.
func ControllerVersions(ctx context.Context, api client.Reader, namespace string) ([]Installed, error) {
	deployments, err := controllerDeployments(ctx, api, namespace)
	if err != nil {
		return nil, err
	}
	out := make([]Installed, 0, len(deployments))
	for _, d := range deployments {
		out = append(out, Installed{Namespace: d.GetNamespace(), Name: d.GetName(),
			Version: d.GetLabels()["app.kubernetes.io/version"], Image: controllerImage(d)})
	}
	return out, nil
}

// controllerImage is the image of the container named controller (the
// chart's), else of the first container.
func controllerImage(d unstructured.Unstructured) string {
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	image := ""
	for i, c := range containers {
		m, _ := c.(map[string]any)
		img, _, _ := unstructured.NestedString(m, "image")
		name, _, _ := unstructured.NestedString(m, "name")
		if name == "controller" {
			return img
		}
		if i == 0 {
			image = img
		}
	}
	return image
}
