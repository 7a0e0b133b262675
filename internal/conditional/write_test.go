package conditional

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

const key = "noderotation.io/active-rotation"

var ctx = context.Background()

// store is a fake API server behind an interceptor that counts reads and
// patches, keeps every patch body, and lets a test fail or precede them.
type store struct {
	t      *testing.T
	base   client.WithWatch
	c      client.WithWatch
	reads  int
	bodies []string
	// onGet runs before a read reaches the store; an error fails it.
	onGet func(obj client.Object) error
	// afterGet runs on the copy the read returned.
	afterGet func(obj client.Object)
	// onPatch runs before a patch reaches the store; an error fails it.
	onPatch func(n int) error
}

func newStore(t *testing.T, objs ...client.Object) *store {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	st := &store{t: t, base: fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()}
	st.c = interceptor.NewClient(st.base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			st.reads++
			if st.onGet != nil {
				if err := st.onGet(obj); err != nil {
					return err
				}
			}
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if st.afterGet != nil {
				st.afterGet(obj)
			}
			return nil
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			data, err := patch.Data(obj)
			if err != nil {
				return err
			}
			st.bodies = append(st.bodies, string(data))
			if st.onPatch != nil {
				if err := st.onPatch(len(st.bodies)); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	})
	return st
}

func pool(ann map[string]string) *karpv1.NodePool {
	return &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: ann}}
}

func (st *store) pool() *karpv1.NodePool {
	st.t.Helper()
	np := &karpv1.NodePool{}
	if err := st.base.Get(ctx, client.ObjectKey{Name: "p"}, np); err != nil {
		st.t.Fatal(err)
	}
	return np
}

var errConflict = apierrors.NewConflict(schema.GroupResource{Group: "karpenter.sh", Resource: "nodepools"}, "p", errors.New("the object has been modified"))

// setIfAbsent is the anchor write's shape: claim key only if it is unset.
func setIfAbsent(np *karpv1.NodePool, value string, calls *int) Mutate {
	return func() (bool, error) {
		*calls++
		if np.Annotations[key] != "" {
			return false, nil
		}
		SetAnnotation(np, key, value)
		return true, nil
	}
}

func TestWriteClaimed(t *testing.T) {
	st := newStore(t, pool(map[string]string{"keep": "me"}))
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	calls := 0
	out, err := Write(ctx, st.c, st.c, np, setIfAbsent(np, "a", &calls))
	if err != nil || out != Claimed {
		t.Fatalf("%s %v", out, err)
	}
	got := st.pool().Annotations
	if got[key] != "a" || got["keep"] != "me" {
		t.Fatalf("annotations %v", got)
	}
	if calls != 1 || st.reads != 1 || len(st.bodies) != 1 {
		t.Fatalf("%d mutates, %d reads, %d patches", calls, st.reads, len(st.bodies))
	}
	// the optimistic lock is really sent, with the version the write was
	// validated against, and only the difference is patched
	want := `{"metadata":{"annotations":{"` + key + `":"a"},"resourceVersion":"999"}}`
	if st.bodies[0] != want {
		t.Fatalf("patch %s, want %s", st.bodies[0], want)
	}
	// obj is left as the copy the write was validated against, as written
	if np.Annotations[key] != "a" || np.ResourceVersion == "999" {
		t.Fatalf("obj after the write: %v rv %s", np.Annotations, np.ResourceVersion)
	}
}

func TestWriteAlreadyInPlaceIsClaimedWithoutAPatch(t *testing.T) {
	st := newStore(t, pool(map[string]string{key: "a"}))
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	out, err := Write(ctx, st.c, st.c, np, func() (bool, error) {
		SetAnnotation(np, key, "a")
		return true, nil
	})
	if err != nil || out != Claimed {
		t.Fatalf("%s %v", out, err)
	}
	if len(st.bodies) != 0 {
		t.Fatalf("patches %v for a change already in place", st.bodies)
	}
}

func TestWriteRacedWritesNothing(t *testing.T) {
	st := newStore(t, pool(map[string]string{key: "other"}))
	before := st.pool()
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	out, err := Write(ctx, st.c, st.c, np, func() (bool, error) {
		SetAnnotation(np, "scribble", "x") // changed, then declined
		return false, nil
	})
	if err != nil || out != Raced {
		t.Fatalf("%s %v", out, err)
	}
	if len(st.bodies) != 0 {
		t.Fatalf("a declined write patched %v", st.bodies)
	}
	if after := st.pool(); after.ResourceVersion != before.ResourceVersion || after.Annotations["scribble"] != "" {
		t.Fatal("store changed")
	}
}

func TestWriteMutateError(t *testing.T) {
	st := newStore(t, pool(nil))
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	boom := errors.New("bad annotation")
	out, err := Write(ctx, st.c, st.c, np, func() (bool, error) {
		SetAnnotation(np, key, "a")
		return true, boom
	})
	if !errors.Is(err, boom) || out == Claimed {
		t.Fatalf("%s %v", out, err)
	}
	if len(st.bodies) != 0 {
		t.Fatal("patched despite the error")
	}
}

func TestWriteGone(t *testing.T) {
	deleting := func(finalizers ...string) func(client.Object) {
		return func(obj client.Object) {
			obj.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
			obj.SetFinalizers(finalizers)
		}
	}
	for _, tc := range []struct {
		name     string
		objs     []client.Object
		afterGet func(client.Object)
		onPatch  func(int) error
		mutates  int
	}{
		{name: "not found on the read", mutates: 0},
		{name: "deleting with no finalizer left", objs: []client.Object{pool(nil)}, afterGet: deleting(), mutates: 0},
		{
			name: "not found on the patch", objs: []client.Object{pool(nil)}, mutates: 1,
			onPatch: func(int) error { return apierrors.NewNotFound(schema.GroupResource{Resource: "nodepools"}, "p") },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t, tc.objs...)
			st.afterGet, st.onPatch = tc.afterGet, tc.onPatch
			np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
			calls := 0
			out, err := Write(ctx, st.c, st.c, np, setIfAbsent(np, "a", &calls))
			if err != nil || out != Gone {
				t.Fatalf("%s %v", out, err)
			}
			if calls != tc.mutates {
				t.Fatalf("mutate called %d times, want %d", calls, tc.mutates)
			}
		})
	}
}

// An object being finalized is still there while a finalizer holds it: the
// write proceeds.
func TestWriteDeletingWithAFinalizerIsWritten(t *testing.T) {
	np0 := pool(nil)
	np0.Finalizers = []string{"karpenter.sh/termination"}
	np0.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	st := newStore(t, np0)
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	calls := 0
	out, err := Write(ctx, st.c, st.c, np, setIfAbsent(np, "a", &calls))
	if err != nil || out != Claimed {
		t.Fatalf("%s %v", out, err)
	}
	if st.pool().Annotations[key] != "a" {
		t.Fatal("not written")
	}
}

func TestWriteConflictThenSuccessRevalidates(t *testing.T) {
	st := newStore(t, pool(nil))
	st.onPatch = func(n int) error {
		if n == 1 {
			return errConflict
		}
		return nil
	}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	calls := 0
	out, err := Write(ctx, st.c, st.c, np, setIfAbsent(np, "a", &calls))
	if err != nil || out != Claimed {
		t.Fatalf("%s %v", out, err)
	}
	if st.reads != 2 || calls != 2 || len(st.bodies) != 2 {
		t.Fatalf("%d reads, %d mutates, %d patches, want 2 of each", st.reads, calls, len(st.bodies))
	}
	if st.pool().Annotations[key] != "a" {
		t.Fatal("not written")
	}
}

// Another writer lands between this write's read and its patch: the store's
// own optimistic lock refuses the patch, and the fresh re-read finds the
// precondition gone.
func TestWriteLosesToAConcurrentWriter(t *testing.T) {
	st := newStore(t, pool(nil))
	st.onPatch = func(n int) error {
		if n == 1 {
			other := st.pool()
			SetAnnotation(other, key, "b")
			if err := st.base.Update(ctx, other); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	}
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	calls := 0
	out, err := Write(ctx, st.c, st.c, np, setIfAbsent(np, "a", &calls))
	if err != nil || out != Raced {
		t.Fatalf("%s %v, want raced", out, err)
	}
	if got := st.pool().Annotations[key]; got != "b" {
		t.Fatalf("anchor %q: the concurrent writer's value was overwritten", got)
	}
	if calls != 2 {
		t.Fatalf("mutate called %d times, want 2 (re-validated)", calls)
	}
}

func TestWritePersistentConflict(t *testing.T) {
	st := newStore(t, pool(nil))
	st.onPatch = func(int) error { return errConflict }
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	calls := 0
	out, err := Write(ctx, st.c, st.c, np, setIfAbsent(np, "a", &calls))
	if err == nil || out != "" {
		t.Fatalf("%q %v", out, err)
	}
	if want := fmt.Sprintf("writing /p: still conflicting after %d fresh reads", Retries); err.Error() != want {
		t.Fatalf("error %q, want %q", err, want)
	}
	if st.reads != Retries || len(st.bodies) != Retries || calls != Retries {
		t.Fatalf("%d reads, %d patches, %d mutates, want %d", st.reads, len(st.bodies), calls, Retries)
	}
	if st.pool().Annotations[key] != "" {
		t.Fatal("written")
	}
}

func TestWriteReadErrorNamesTheKey(t *testing.T) {
	st := newStore(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ph"}})
	boom := apierrors.NewInternalError(errors.New("etcd unavailable"))
	st.onGet = func(client.Object) error { return boom }
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ph"}}
	called := false
	out, err := Write(ctx, st.c, st.c, pod, func() (bool, error) { called = true; return true, nil })
	if err == nil || out != "" || called {
		t.Fatalf("%q %v called %v", out, err, called)
	}
	if !strings.HasPrefix(err.Error(), "reading ns/ph: ") || !errors.Is(err, boom) {
		t.Fatalf("error %q", err)
	}
}

func TestWritePatchErrorNamesTheKey(t *testing.T) {
	st := newStore(t, pool(nil))
	boom := apierrors.NewForbidden(schema.GroupResource{Resource: "nodepools"}, "p", errors.New("rbac"))
	st.onPatch = func(int) error { return boom }
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	calls := 0
	out, err := Write(ctx, st.c, st.c, np, setIfAbsent(np, "a", &calls))
	if err == nil || out != "" || !strings.HasPrefix(err.Error(), "patching /p: ") || !errors.Is(err, boom) {
		t.Fatalf("%q %v", out, err)
	}
	if len(st.bodies) != 1 {
		t.Fatalf("%d patches: a non-conflict error is not retried", len(st.bodies))
	}
}

// mutate sees the fresh copy, never what the caller's object held.
func TestWriteValidatesTheFreshCopy(t *testing.T) {
	st := newStore(t, pool(map[string]string{key: "b"}))
	np := pool(nil) // a stale observation: no anchor
	calls := 0
	out, err := Write(ctx, st.c, st.c, np, setIfAbsent(np, "a", &calls))
	if err != nil || out != Raced {
		t.Fatalf("%s %v", out, err)
	}
	st2 := newStore(t, pool(nil))
	np = pool(map[string]string{key: "stale"}) // a stale observation: anchored
	out, err = Write(ctx, st2.c, st2.c, np, setIfAbsent(np, "a", &calls))
	if err != nil || out != Claimed || st2.pool().Annotations[key] != "a" {
		t.Fatalf("%s %v", out, err)
	}
}

func TestSetAnnotation(t *testing.T) {
	np := &karpv1.NodePool{}
	SetAnnotation(np, "a", "1")
	if np.Annotations["a"] != "1" {
		t.Fatal("not set on a nil map")
	}
	SetAnnotation(np, "a", "2")
	SetAnnotation(np, "b", "")
	if len(np.Annotations) != 2 || np.Annotations["a"] != "2" {
		t.Fatalf("%v", np.Annotations)
	}
	if _, ok := np.Annotations["b"]; !ok {
		t.Fatal("an empty value is still set")
	}
}

func TestDeleteAnnotations(t *testing.T) {
	np := &karpv1.NodePool{}
	DeleteAnnotations(np, "a", "b") // nil map: no panic
	if np.Annotations != nil {
		t.Fatalf("%v", np.Annotations)
	}
	np.Annotations = map[string]string{"a": "1", "b": "2", "c": "3"}
	DeleteAnnotations(np, "a", "b", "missing")
	if len(np.Annotations) != 1 || np.Annotations["c"] != "3" {
		t.Fatalf("%v", np.Annotations)
	}
	DeleteAnnotations(np)
	if len(np.Annotations) != 1 {
		t.Fatal("no keys deleted something")
	}
}

// WriteFromCache decides on the copy it is given: no read when that copy is
// current, nothing sent when it already holds the change, and Stale —
// nothing read, nothing written over the newer object — when the copy is
// behind.
func TestWriteFromCache(t *testing.T) {
	node := func(ann map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: ann}}
	}
	set := func(n *corev1.Node) Mutate {
		return func() (bool, error) {
			if n.Annotations["owner"] != "" {
				return false, nil // someone else's: the precondition fails
			}
			SetAnnotation(n, "mine", "true")
			return true, nil
		}
	}
	current := func(st *store) *corev1.Node {
		n := &corev1.Node{}
		if err := st.base.Get(ctx, client.ObjectKey{Name: "n"}, n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("a current copy: one patch, no read", func(t *testing.T) {
		st := newStore(t, node(nil))
		n := current(st)
		out, err := WriteFromCache(ctx, st.c, st.c, n, set(n), nil)
		if err != nil || out != Claimed || st.reads != 0 || len(st.bodies) != 1 {
			t.Fatalf("%s %v reads %d patches %v", out, err, st.reads, st.bodies)
		}
		if !strings.Contains(st.bodies[0], `"resourceVersion"`) {
			t.Errorf("patch %s carries no resourceVersion", st.bodies[0])
		}
	})
	t.Run("already in place on the copy: nothing sent", func(t *testing.T) {
		st := newStore(t, node(map[string]string{"mine": "true"}))
		n := current(st)
		out, err := WriteFromCache(ctx, st.c, st.c, n, set(n), nil)
		if err != nil || out != Claimed || st.reads != 0 || len(st.bodies) != 0 {
			t.Fatalf("%s %v reads %d patches %v", out, err, st.reads, st.bodies)
		}
	})
	t.Run("a stale copy: conflict, Stale, no read", func(t *testing.T) {
		st := newStore(t, node(nil))
		stale := current(st)
		update(t, st.base, "n", func(n *corev1.Node) { SetAnnotation(n, "owner", "operator") })
		out, err := WriteFromCache(ctx, st.c, st.c, stale, set(stale), nil)
		if err != nil || out != Stale || st.reads != 0 || len(st.bodies) != 1 {
			t.Fatalf("%s %v reads %d patches %v", out, err, st.reads, st.bodies)
		}
		if got := current(st).Annotations; got["mine"] != "" || got["owner"] != "operator" {
			t.Errorf("annotations %v: the stale decision landed", got)
		}
	})
	t.Run("confirm refuses: Stale, nothing sent; not asked when nothing is to send", func(t *testing.T) {
		st := newStore(t, node(nil))
		n := current(st)
		asked := 0
		refuse := func() (bool, error) { asked++; return false, nil }
		out, err := WriteFromCache(ctx, st.c, st.c, n, set(n), refuse)
		if err != nil || out != Stale || asked != 1 || len(st.bodies) != 0 || current(st).Annotations["mine"] != "" {
			t.Fatalf("%s %v asked %d patches %v", out, err, asked, st.bodies)
		}
		st = newStore(t, node(map[string]string{"mine": "true"}))
		n = current(st)
		if out, err := WriteFromCache(ctx, st.c, st.c, n, set(n), refuse); err != nil || out != Claimed || asked != 1 {
			t.Fatalf("already in place: %s %v, confirm asked %d times", out, err, asked)
		}
	})
	t.Run("a copy without a resourceVersion is read fresh", func(t *testing.T) {
		st := newStore(t, node(nil))
		n := node(nil)
		out, err := WriteFromCache(ctx, st.c, st.c, n, set(n), nil)
		if err != nil || out != Claimed || st.reads != 1 || current(st).Annotations["mine"] != "true" {
			t.Fatalf("%s %v reads %d", out, err, st.reads)
		}
	})
}

// update changes the stored node directly (another writer), bumping its
// resourceVersion.
func update(t *testing.T, c client.Client, name string, change func(*corev1.Node)) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	change(n)
	if err := c.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
}
