package simulate

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

func apiutilGVK(c client.Reader, obj runtime.Object) (schema.GroupVersionKind, error) {
	return apiutil.GVKForObject(obj, c.(client.Client).Scheme())
}

// itemOf is an empty object of a list's item kind.
func itemOf(c client.Reader, list client.ObjectList) (runtime.Object, error) {
	gvk, err := apiutilGVK(c, list)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(gvk.Kind, "List") {
		return nil, fmt.Errorf("%s is not a list kind", gvk.Kind)
	}
	return c.(client.Client).Scheme().New(gvk.GroupVersion().WithKind(strings.TrimSuffix(gvk.Kind, "List")))
}

// resourceOf names obj's kind for a NotFound error (only its text reads it).
func resourceOf(obj runtime.Object) schema.GroupResource {
	return schema.GroupResource{Resource: strings.ToLower(kind(obj))}
}
