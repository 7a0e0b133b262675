package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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
	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

var ctxb = context.Background()

// The pass's clock and the stamp every write of the pass makes with it.
var (
	now      = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	nowStamp = "2026-11-30T10:00:00Z"
)

const (
	poolName = "pool"
	claimA   = "claim-a"
	oldNode  = "node-old"
	hostNode = "node-host"
	phNS     = "rotation-system"
)

// env is a fake API server for one test: base is the store, c the client
// the actions use (base behind an interceptor that records every write and
// lets a test inject failures).
type env struct {
	t    *testing.T
	base client.WithWatch
	c    client.WithWatch

	gets   int
	writes []string // "patch NodePool/pool", "delete NodeClaim/claim-a", ...
	bodies []string // the data of every patch that reached the interceptor
	// deletes: the options of every delete that reached the interceptor
	deletes []client.DeleteOptions

	// Hooks: return a non-nil error to fail the call instead of delegating.
	onGet    func(key client.ObjectKey, obj client.Object) error
	onPatch  func(obj client.Object, patch client.Patch) error
	onCreate func(obj client.Object) error
	onDelete func(obj client.Object) error
	onList   func(list client.ObjectList) error
}

func newEnv(t *testing.T, objs ...client.Object) *env {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t}
	e.base = fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string {
			return []string{o.(*corev1.Pod).Spec.NodeName}
		}).Build()
	e.c = interceptor.NewClient(e.base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			e.gets++
			if e.onGet != nil {
				if err := e.onGet(key, obj); err != nil {
					return err
				}
			}
			return c.Get(ctx, key, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if e.onList != nil {
				if err := e.onList(list); err != nil {
					return err
				}
			}
			return c.List(ctx, list, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			e.bodies = append(e.bodies, string(data))
			e.writes = append(e.writes, "patch "+e.ref(obj))
			if e.onPatch != nil {
				if err := e.onPatch(obj, patch); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			e.writes = append(e.writes, "create "+e.ref(obj))
			if e.onCreate != nil {
				if err := e.onCreate(obj); err != nil {
					return err
				}
			}
			return c.Create(ctx, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			e.writes = append(e.writes, "delete "+e.ref(obj))
			o := client.DeleteOptions{}
			o.ApplyOptions(opts)
			e.deletes = append(e.deletes, o)
			if e.onDelete != nil {
				if err := e.onDelete(obj); err != nil {
					return err
				}
			}
			return deleteWithUIDPrecondition(ctx, c, obj, opts...)
		},
	})
	return e
}

// deleteWithUIDPrecondition is the API server's delete: the fake client
// checks a resourceVersion precondition but not a UID one.
func deleteWithUIDPrecondition(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
	o := client.DeleteOptions{}
	o.ApplyOptions(opts)
	if o.Preconditions != nil && o.Preconditions.UID != nil {
		cur := obj.DeepCopyObject().(client.Object)
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
			return err
		}
		if cur.GetUID() != *o.Preconditions.UID {
			return apierrors.NewConflict(schema.GroupResource{Resource: "objects"}, obj.GetName(),
				fmt.Errorf("precondition failed: UID in precondition: %s, UID in object meta: %s", *o.Preconditions.UID, cur.GetUID()))
		}
	}
	return c.Delete(ctx, obj, opts...)
}

func (e *env) ref(obj client.Object) string {
	gvk, err := apiutil.GVKForObject(obj, e.base.Scheme())
	if err != nil {
		e.t.Fatal(err)
	}
	if obj.GetNamespace() != "" {
		return gvk.Kind + "/" + obj.GetNamespace() + "/" + obj.GetName()
	}
	return gvk.Kind + "/" + obj.GetName()
}

// conflicts makes the next n patches fail with a 409 before they reach the
// store.
func (e *env) conflicts(n int) {
	left := n
	e.onPatch = func(obj client.Object, _ client.Patch) error {
		if left == 0 {
			return nil
		}
		left--
		return apierrors.NewConflict(schema.GroupResource{Resource: "objects"}, obj.GetName(), errors.New("the object has been modified"))
	}
}

// beforeFirstPatch runs f against the store just before the first patch
// lands: another writer that got there between this pass's fresh read and
// its write. The patch then meets the store's own optimistic lock.
func (e *env) beforeFirstPatch(f func(c client.Client)) {
	done := false
	e.onPatch = func(client.Object, client.Patch) error {
		if !done {
			done = true
			f(e.base)
		}
		return nil
	}
}

// update changes a stored object through the store directly.
func update[T client.Object](t *testing.T, c client.Client, obj T, change func(T)) {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	change(obj)
	if err := c.Update(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

func (e *env) resetLog() { e.writes, e.bodies, e.gets = nil, nil, 0 }

func (e *env) pool(name string) *karpv1.NodePool {
	e.t.Helper()
	np := &karpv1.NodePool{}
	if err := e.base.Get(context.Background(), client.ObjectKey{Name: name}, np); err != nil {
		e.t.Fatal(err)
	}
	return np
}

func (e *env) claim(name string) *karpv1.NodeClaim {
	e.t.Helper()
	c := &karpv1.NodeClaim{}
	if err := e.base.Get(context.Background(), client.ObjectKey{Name: name}, c); err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) node(name string) *corev1.Node {
	e.t.Helper()
	n := &corev1.Node{}
	if err := e.base.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// exists reports whether obj's key is in the store (and not deleting).
func (e *env) exists(obj client.Object) bool {
	e.t.Helper()
	cur := obj.DeepCopyObject().(client.Object)
	err := e.base.Get(context.Background(), client.ObjectKeyFromObject(obj), cur)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return cur.GetDeletionTimestamp() == nil
}

// state is every stored object with its resourceVersion dropped: two equal
// states hold the same content.
func (e *env) state() string {
	e.t.Helper()
	ctx := context.Background()
	var b strings.Builder
	lists := []client.ObjectList{&karpv1.NodePoolList{}, &karpv1.NodeClaimList{}, &corev1.NodeList{}, &corev1.PodList{}}
	for _, l := range lists {
		if err := e.base.List(ctx, l); err != nil {
			e.t.Fatal(err)
		}
		var items []client.Object
		switch l := l.(type) {
		case *karpv1.NodePoolList:
			for i := range l.Items {
				items = append(items, &l.Items[i])
			}
		case *karpv1.NodeClaimList:
			for i := range l.Items {
				items = append(items, &l.Items[i])
			}
		case *corev1.NodeList:
			for i := range l.Items {
				items = append(items, &l.Items[i])
			}
		case *corev1.PodList:
			for i := range l.Items {
				items = append(items, &l.Items[i])
			}
		}
		for _, o := range items {
			o.SetResourceVersion("")
			data, err := json.Marshal(o)
			if err != nil {
				e.t.Fatal(err)
			}
			b.Write(data)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (e *env) pass(t Targets) *Pass { return &Pass{Client: e.c, Fresh: e.c, Targets: t} }

// step runs one action the way Run does, recording its result on the pass.
func step(p *Pass, name string, args map[string]any) (Result, error) {
	run, ok := registry[name]
	if !ok {
		panic("no action " + name)
	}
	res, err := run(context.Background(), p, args)
	res.Action = name
	p.Results = append(p.Results, res)
	return res, err
}

// outcome is what a step reports: its Outcome, or for cordon and uncordon
// (which report Done and name the conditional write's outcome in Did) the
// write's outcome.
func outcome(r Result) Outcome {
	if r.Outcome == Done {
		if i := strings.LastIndex(r.Did, ": "); i >= 0 {
			return Outcome(r.Did[i+2:])
		}
	}
	return r.Outcome
}

// Fixtures.

func mkPool(name string, ann map[string]string) *karpv1.NodePool {
	return &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
}

func mkClaim(name string, ann map[string]string) *karpv1.NodeClaim {
	return &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Annotations: ann}}
}

func mkNode(name string, labels, ann map[string]string, unschedulable bool) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: ann},
		Spec:       corev1.NodeSpec{Unschedulable: unschedulable},
	}
}

func mkPod(ns, name, node string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// ann builds an annotation map from key, value pairs.
func ann(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// targets observes the pool and the claim as a pass would.
func (e *env) targets() Targets {
	e.t.Helper()
	t := Targets{Now: now, Claim: claimA, PlaceholderKey: types.NamespacedName{Namespace: phNS, Name: "ph-" + claimA}}
	np := &karpv1.NodePool{}
	if err := e.base.Get(context.Background(), client.ObjectKey{Name: poolName}, np); err == nil {
		t.Pool = np
	} else {
		t.Pool = mkPool(poolName, nil)
	}
	c := &karpv1.NodeClaim{}
	if err := e.base.Get(context.Background(), client.ObjectKey{Name: claimA}, c); err == nil {
		t.ClaimObject = c
	}
	n := &corev1.Node{}
	if err := e.base.Get(context.Background(), client.ObjectKey{Name: oldNode}, n); err == nil {
		t.OldNode = n
	}
	return t
}

const (
	keyAnchor     = v1alpha1.AnnotationActiveRotation
	keyMirror     = v1alpha1.AnnotationActiveRotationState
	keyDraining   = v1alpha1.AnnotationDrainingAt
	keySurgeWait  = v1alpha1.AnnotationSurgeWait
	keySurgeNode  = v1alpha1.AnnotationSurgeNode
	keyMode       = v1alpha1.AnnotationRotationMode
	keyState      = v1alpha1.AnnotationState
	keyStarted    = v1alpha1.AnnotationStartedAt
	keyFailed     = v1alpha1.AnnotationFailedAt
	keyRetry      = v1alpha1.AnnotationRetryCount
	keySurge      = v1alpha1.AnnotationSurgeClaim
	keyReason     = v1alpha1.AnnotationFailureReason
	keyRecent     = v1alpha1.AnnotationRecentRotations
	keyRotateNext = v1alpha1.AnnotationRotateNext
	keyDND        = v1alpha1.KarpenterDoNotDisrupt
	keyOwned      = v1alpha1.AnnotationDoNotDisruptOwned
	keyCordoned   = v1alpha1.AnnotationCordoned
	labelPair     = v1alpha1.LabelSurgeFor
	keyWindow     = v1alpha1.AnnotationWindowOpenedAt
	keyLastFail   = v1alpha1.AnnotationLastFailureAt
	keyLastRot    = v1alpha1.AnnotationLastRotationAt
)

// holdWritten makes the rotation claim with these annotations the pass's
// newest copy, as a write earlier in the pass would (nothing when nil).
func holdWritten(p *Pass, annotations map[string]string) {
	if annotations == nil {
		return
	}
	c := mkClaim(p.Targets.Claim, annotations)
	c.ResourceVersion = "999"
	p.hold(c)
}

// wantAnn checks the annotations named in want ("" means absent).
func wantAnn(t *testing.T, what string, got map[string]string, want map[string]string) {
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
