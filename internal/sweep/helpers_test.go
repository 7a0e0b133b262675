package sweep

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/announce"
	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

const ns = "rotation-system"

var ctx = context.Background()

// alerts is the announcer the controller gives the sweep, logging into the
// world's lines, with the claims it was told about recorded.
type alerts struct {
	*announce.Announcer
	calls []string
}

func (a *alerts) SweptClaim(c *karpv1.NodeClaim, from string) {
	a.calls = append(a.calls, c.Name+" from "+from+" now "+c.Annotations[v1alpha1.AnnotationState])
	a.Announcer.SweptClaim(c, from)
}

// world is a fake API server and a sweeper over it: base is the store, the
// sweeper's clients go through an interceptor that records every write and
// lets a test fail lists or precede reads.
type world struct {
	t      *testing.T
	base   client.WithWatch
	c      client.WithWatch
	writes []string
	logs   []string
	alerts *alerts
	s      *Sweeper

	listErr map[string]error // by list kind, e.g. "NodeList"
	// onList runs before a list reaches the store; an error fails it.
	onList  func(kind string) error
	onGet   func(key client.ObjectKey, kind string) // runs before a read reaches the store
	onPatch func(obj client.Object) error
	// onDelete runs before a delete reaches the store; an error fails it.
	onDelete func(obj client.Object) error
	mu       sync.Mutex
}

func newWorld(t *testing.T, objs ...client.Object) *world {
	t.Helper()
	sch, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, alerts: &alerts{}, listErr: map[string]error{}}
	w.base = fake.NewClientBuilder().WithScheme(sch).WithObjects(objs...).Build()
	kind := func(o client.Object) string {
		gvk, err := apiutil.GVKForObject(o, sch)
		if err != nil {
			t.Fatal(err)
		}
		return gvk.Kind
	}
	ref := func(o client.Object) string {
		if o.GetNamespace() != "" {
			return kind(o) + "/" + o.GetNamespace() + "/" + o.GetName()
		}
		return kind(o) + "/" + o.GetName()
	}
	w.c = interceptor.NewClient(w.base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if w.onGet != nil {
				w.onGet(key, kind(obj))
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			gvk, err := apiutil.GVKForObject(list, sch)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.listErr[gvk.Kind]; err != nil {
				return err
			}
			if w.onList != nil {
				if err := w.onList(gvk.Kind); err != nil {
					return err
				}
			}
			return c.List(ctx, list, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			w.writes = append(w.writes, "patch "+ref(obj))
			if w.onPatch != nil {
				if err := w.onPatch(obj); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.writes = append(w.writes, "delete "+ref(obj))
			if w.onDelete != nil {
				if err := w.onDelete(obj); err != nil {
					return err
				}
			}
			o := client.DeleteOptions{}
			o.ApplyOptions(opts)
			if o.Preconditions != nil && o.Preconditions.UID != nil {
				cur := obj.DeepCopyObject().(client.Object)
				if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
					return err
				}
				if cur.GetUID() != *o.Preconditions.UID {
					return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, obj.GetName(), fmt.Errorf("UID precondition failed"))
				}
			}
			return c.Delete(ctx, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.writes = append(w.writes, "create "+ref(obj))
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.writes = append(w.writes, "update "+ref(obj))
			return c.Update(ctx, obj, opts...)
		},
	})
	log := funcr.New(func(prefix, args string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.logs = append(w.logs, args)
	}, funcr.Options{})
	w.alerts.Announcer = announce.New(log, nil)
	w.s = &Sweeper{Client: w.c, Fresh: w.c, Namespace: ns, Say: w.alerts}
	return w
}

func (w *world) run() {
	w.t.Helper()
	w.s.Run(ctx)
}

// reset forgets what earlier runs did.
func (w *world) reset() { w.writes, w.logs, w.alerts.calls = nil, nil, nil }

// logged returns the log lines containing every part.
func (w *world) logged(parts ...string) []string {
	var out []string
	for _, l := range w.logs {
		ok := true
		for _, p := range parts {
			if !strings.Contains(l, p) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

func (w *world) pool(name string) *karpv1.NodePool {
	w.t.Helper()
	np := &karpv1.NodePool{}
	if err := w.base.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
		w.t.Fatal(err)
	}
	return np
}

func (w *world) claim(name string) *karpv1.NodeClaim {
	w.t.Helper()
	c := &karpv1.NodeClaim{}
	if err := w.base.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
		w.t.Fatal(err)
	}
	return c
}

func (w *world) node(name string) *corev1.Node {
	w.t.Helper()
	n := &corev1.Node{}
	if err := w.base.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		w.t.Fatal(err)
	}
	return n
}

func (w *world) podExists(namespace, name string) bool {
	w.t.Helper()
	err := w.base.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Pod{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return true
}

// state is every stored object, resourceVersions included: equal states
// mean nothing was written.
func (w *world) state() string {
	w.t.Helper()
	var b strings.Builder
	for _, l := range []client.ObjectList{&karpv1.NodePoolList{}, &karpv1.NodeClaimList{}, &corev1.NodeList{}, &corev1.PodList{}} {
		if err := w.base.List(ctx, l); err != nil {
			w.t.Fatal(err)
		}
		data, err := json.Marshal(l)
		if err != nil {
			w.t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

// Fixtures.

func ann(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func mkPool(name string, a map[string]string) *karpv1.NodePool {
	return &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: a}}
}

func mkClaim(name, node string, a map[string]string) *karpv1.NodeClaim {
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Annotations: a}}
	c.Status.NodeName = node
	return c
}

func mkNode(name string, labels, a map[string]string, unschedulable bool) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: a}, Spec: corev1.NodeSpec{Unschedulable: unschedulable}}
}

func mkPod(namespace, name, claim string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pause", Image: "pause"}}}}
	if claim != "" {
		p.Labels = map[string]string{v1alpha1.LabelSurgeFor: claim}
	}
	return p
}

// mkPrePull is a pre-pull Pod of claim (docs/design.md#pre-pull).
func mkPrePull(namespace, name, claim string) *corev1.Pod {
	p := mkPod(namespace, name, "")
	p.Labels = map[string]string{v1alpha1.LabelPrePullFor: claim}
	return p
}

func pair(claim string) map[string]string { return map[string]string{v1alpha1.LabelSurgeFor: claim} }

const (
	keyAnchor   = v1alpha1.AnnotationActiveRotation
	keyMirror   = v1alpha1.AnnotationActiveRotationState
	keyDraining = v1alpha1.AnnotationDrainingAt
	keyWait     = v1alpha1.AnnotationSurgeWait
	keyMode     = v1alpha1.AnnotationRotationMode
	keyState    = v1alpha1.AnnotationState
	keyFailed   = v1alpha1.AnnotationFailedAt
	keyDND      = v1alpha1.KarpenterDoNotDisrupt
	keyOwned    = v1alpha1.AnnotationDoNotDisruptOwned
	keyCordoned = v1alpha1.AnnotationCordoned
	labelPair   = v1alpha1.LabelSurgeFor
)

// wantAnn checks the named keys ("" means absent).
func wantAnn(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		switch {
		case v == "" && ok:
			t.Errorf("%s: %s = %q, want it absent", what, k, g)
		case v != "" && g != v:
			t.Errorf("%s: %s = %q, want %q", what, k, g, v)
		}
	}
}
