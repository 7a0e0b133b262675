package simulate

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// store sits between the controller and the in-memory API server
// (controller-runtime's fake client) and does two things the simulation
// needs.
//
// It keeps the simulated clock: the fake client stamps a deletionTimestamp
// with the wall clock and leaves creationTimestamp unset, while the
// controller reads both (a placeholder's age, a drain's start). Creates are
// stamped with the simulated time; the simulated time of each delete is
// remembered and written over the wall clock's on every object read back.
//
// And it serves reads as an informer cache does, from copies kept up to
// date write by write: the fake client round-trips every read through
// JSON, which would otherwise be most of a simulation's time.
type store struct {
	now     func() metav1.Time
	deleted map[objectKey]metav1.Time
	objects map[objectKey]client.Object // every object, as last written
	listed  map[string]bool             // kinds loaded into objects
}

type objectKey struct {
	kind string
	key  client.ObjectKey
}

func newStore(now func() metav1.Time) *store {
	return &store{now: now, deleted: map[objectKey]metav1.Time{}, objects: map[objectKey]client.Object{}, listed: map[string]bool{}}
}

func kind(o runtime.Object) string { return reflect.TypeOf(o).Elem().Name() }

func keyOf(obj client.Object) objectKey { return objectKey{kind(obj), client.ObjectKeyFromObject(obj)} }

func (s *store) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if t := obj.GetCreationTimestamp(); t.IsZero() {
				obj.SetCreationTimestamp(s.now())
			}
			return s.wrote(ctx, c, obj, c.Create(ctx, obj, opts...))
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			err := c.Delete(ctx, obj, opts...)
			if _, ok := s.deleted[keyOf(obj)]; !ok && err == nil {
				s.deleted[keyOf(obj)] = s.now()
			}
			return s.wrote(ctx, c, obj, err)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			return s.wrote(ctx, c, obj, c.Update(ctx, obj, opts...))
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			return s.wrote(ctx, c, obj, c.Patch(ctx, obj, patch, opts...))
		},
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			return s.wrote(ctx, c, obj, c.SubResource(sub).Update(ctx, obj, opts...))
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
			return s.wrote(ctx, c, obj, c.SubResource(sub).Patch(ctx, obj, patch, opts...))
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			if err := s.load(ctx, c, obj); err != nil {
				return err
			}
			o, ok := s.objects[objectKey{kind(obj), key}]
			if !ok {
				return apierrors.NewNotFound(resourceOf(obj), key.Name)
			}
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o.DeepCopyObject()).Elem())
			return nil
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			return s.list(ctx, c, list, (&client.ListOptions{}).ApplyOptions(opts))
		},
	}
}

// wrote brings the kept copy of obj up to date after a write (err is the
// write's answer, passed through).
func (s *store) wrote(ctx context.Context, c client.Reader, obj client.Object, err error) error {
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	k := keyOf(obj)
	fresh := obj.DeepCopyObject().(client.Object)
	switch gerr := c.Get(ctx, k.key, fresh); {
	case apierrors.IsNotFound(gerr):
		delete(s.objects, k)
		delete(s.deleted, k)
	case gerr != nil:
		return fmt.Errorf("reading back %s %s: %w", k.kind, k.key, gerr)
	default:
		s.fix(fresh)
		s.objects[k] = fresh
		if err == nil {
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(fresh.DeepCopyObject()).Elem())
		}
	}
	return err
}

// load reads every object of obj's kind from the API server once.
func (s *store) load(ctx context.Context, c client.Reader, obj runtime.Object) error {
	k := kind(obj)
	if s.listed[k] {
		return nil
	}
	gvk, err := apiutilGVK(c, obj)
	if err != nil {
		return fmt.Errorf("the kind of %T: %w", obj, err)
	}
	list, err := c.(client.Client).Scheme().New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return fmt.Errorf("a list of %s: %w", gvk.Kind, err)
	}
	if err := c.List(ctx, list.(client.ObjectList)); err != nil {
		return fmt.Errorf("listing %s: %w", gvk.Kind, err)
	}
	s.listed[k] = true
	return meta.EachListItem(list, func(o runtime.Object) error {
		obj := o.(client.Object)
		s.fix(obj)
		s.objects[keyOf(obj)] = obj.DeepCopyObject().(client.Object)
		return nil
	})
}

// list serves a List from the kept copies, filtered as the API server
// filters (namespace, label selector, the spec.nodeName field of Pods),
// in name order.
func (s *store) list(ctx context.Context, c client.Reader, list client.ObjectList, lo *client.ListOptions) error {
	item, err := itemOf(c, list)
	if err != nil {
		return err
	}
	if err := s.load(ctx, c, item); err != nil {
		return err
	}
	k := kind(item)
	var out []client.Object
	for key, o := range s.objects {
		if key.kind == k && matches(o, lo) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b client.Object) int {
		if c := strings.Compare(a.GetNamespace(), b.GetNamespace()); c != 0 {
			return c
		}
		return strings.Compare(a.GetName(), b.GetName())
	})
	items := make([]runtime.Object, len(out))
	for i, o := range out {
		items[i] = o.DeepCopyObject()
	}
	return meta.SetList(list, items)
}

func matches(o client.Object, lo *client.ListOptions) bool {
	if lo.Namespace != "" && o.GetNamespace() != lo.Namespace {
		return false
	}
	if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(o.GetLabels())) {
		return false
	}
	if lo.FieldSelector != nil && !lo.FieldSelector.Empty() {
		p, ok := o.(*corev1.Pod)
		if !ok {
			return false
		}
		return lo.FieldSelector.Matches(fields.Set{"spec.nodeName": p.Spec.NodeName})
	}
	return true
}

// fix writes the simulated deletion time over the wall clock's.
func (s *store) fix(obj client.Object) {
	if obj.GetDeletionTimestamp() == nil {
		return
	}
	if t, ok := s.deleted[keyOf(obj)]; ok {
		obj.SetDeletionTimestamp(&t)
	}
}
