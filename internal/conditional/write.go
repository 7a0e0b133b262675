package conditional

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Outcome of a conditional write.
type Outcome string

const (
	// Claimed: the precondition held on a fresh copy and the write landed
	// (or the change was already in place on that copy).
	Claimed Outcome = "claimed"
	// Raced: the fresh copy no longer satisfies the precondition; another
	// pass owns what this one meant to write.
	Raced Outcome = "raced"
	// Gone: the object no longer exists (or is being finalized with no
	// finalizer left to hold it).
	Gone Outcome = "gone"
)

// Retries bounds how often a write re-reads and re-validates after losing
// an optimistic-lock race; a pass that still conflicts after that returns an
// error and its reconcile is retried with backoff.
const Retries = 5

// Mutate checks the precondition on the fresh copy the write is validated
// against and changes that copy; it returns false when the precondition does
// not hold (nothing is written, the outcome is Raced).
type Mutate func() (bool, error)

// Write re-reads obj through fresh, lets mutate validate and change it, and
// merge-patches the difference with a resourceVersion precondition through
// writer. On a conflict it starts over from a fresh read, so the outcome
// always describes the copy the write was validated against.
func Write(ctx context.Context, fresh client.Reader, writer client.Writer, obj client.Object, mutate Mutate) (Outcome, error) {
	return write(ctx, fresh, writer, obj, mutate, false)
}

// WriteFromCache is Write that starts from obj as given — a cached copy —
// instead of a fresh read: the precondition is checked on that copy and the
// patch carries its resourceVersion, so a cache that missed a change costs
// a conflict and a fresh retry, never a decision on stale data. When the
// copy already satisfies the change, nothing is sent at all.
func WriteFromCache(ctx context.Context, fresh client.Reader, writer client.Writer, obj client.Object, mutate Mutate) (Outcome, error) {
	return write(ctx, fresh, writer, obj, mutate, true)
}

func write(ctx context.Context, fresh client.Reader, writer client.Writer, obj client.Object, mutate Mutate, fromCache bool) (Outcome, error) {
	key := client.ObjectKeyFromObject(obj)
	for attempt := 0; attempt < Retries; attempt++ {
		if attempt == 0 && fromCache && obj.GetResourceVersion() != "" {
			// the first attempt decides on the copy it was given; a copy
			// without a resourceVersion cannot lock, so it is read fresh
		} else if err := fresh.Get(ctx, key, obj); err != nil {
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
			return Claimed, nil
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
	return "", fmt.Errorf("writing %s: still conflicting after %d fresh reads", key, Retries)
}

// SetAnnotation sets one annotation on obj, creating the map if needed.
func SetAnnotation(obj client.Object, key, value string) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	obj.SetAnnotations(a)
}

// DeleteAnnotations removes keys from obj's annotations.
func DeleteAnnotations(obj client.Object, keys ...string) {
	a := obj.GetAnnotations()
	for _, k := range keys {
		delete(a, k)
	}
	obj.SetAnnotations(a)
}
