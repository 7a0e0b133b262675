package actions

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// conflictRetries bounds how often a conditional write re-reads and
// re-validates after losing an optimistic-lock race.
const conflictRetries = 5

// conditional is Conditional with the pass's clients.
func conditional(ctx context.Context, p *Pass, obj client.Object, mutate func() (bool, error)) (Outcome, error) {
	return Conditional(ctx, p.Fresh, p.Client, obj, mutate)
}

// Conditional re-reads obj fresh, lets mutate validate the precondition on
// that copy and change it (mutate returns false when the precondition does
// not hold), and patches only what changed with a resourceVersion
// precondition. On a conflict it starts over from a fresh read, so the
// outcome always describes the copy the write was validated against.
func Conditional(ctx context.Context, fresh client.Reader, writer client.Client, obj client.Object, mutate func() (bool, error)) (Outcome, error) {
	key := client.ObjectKeyFromObject(obj)
	for attempt := 0; attempt < conflictRetries; attempt++ {
		if err := fresh.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return Gone, nil
			}
			return "", fmt.Errorf("reading %s: %w", key, err)
		}
		if obj.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 {
			return Gone, nil
		}
		orig := obj.DeepCopyObject().(client.Object)
		ok, err := mutate()
		if err != nil || !ok {
			return Raced, err
		}
		if equality.Semantic.DeepEqual(orig, obj) {
			return Claimed, nil // already in place on the fresh copy
		}
		err = writer.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
		switch {
		case err == nil:
			return Claimed, nil
		case apierrors.IsNotFound(err):
			return Gone, nil
		case apierrors.IsConflict(err):
			continue
		}
		return "", fmt.Errorf("patching %s: %w", key, err)
	}
	return "", fmt.Errorf("writing %s: still conflicting after %d fresh reads", key, conflictRetries)
}

// patchAnnotations merge-patches only the given annotations (nil value
// removes the key), from the cached copy, without a lock: for idempotent
// markers whose precondition is not a race.
func patchAnnotations(ctx context.Context, c client.Client, obj client.Object, set map[string]*string) (bool, error) {
	orig := obj.DeepCopyObject().(client.Object)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	changed := false
	for k, v := range set {
		cur, has := ann[k]
		switch {
		case v == nil && has:
			delete(ann, k)
			changed = true
		case v != nil && (!has || cur != *v):
			ann[k] = *v
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	obj.SetAnnotations(ann)
	if err := c.Patch(ctx, obj, client.MergeFrom(orig)); err != nil {
		return false, fmt.Errorf("patching %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	return true, nil
}

func str(s string) *string { return &s }

func setAnn(obj client.Object, key, value string) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	obj.SetAnnotations(a)
}

func delAnn(obj client.Object, keys ...string) {
	a := obj.GetAnnotations()
	for _, k := range keys {
		delete(a, k)
	}
	obj.SetAnnotations(a)
}
