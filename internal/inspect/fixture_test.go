package inspect

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/noderotation/node-rotation-controller/internal/inspect/inspecttest"
	"github.com/noderotation/node-rotation-controller/internal/scheme"
	"github.com/noderotation/node-rotation-controller/internal/table"
)

var now = inspecttest.Now

func scripted() []client.Object { return inspecttest.Scripted() }

// inspector reads objs through a fake API server at now.
func inspector(t *testing.T, objs ...client.Object) *Inspector {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Name} }).
		Build()
	eng, err := table.Load()
	if err != nil {
		t.Fatal(err)
	}
	return &Inspector{Reader: c, Engine: eng, Namespace: inspecttest.Namespace, Clock: func() time.Time { return now }}
}
