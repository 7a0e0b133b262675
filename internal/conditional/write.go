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
	// Stale: a write decided on a cached copy met a newer object (409); the
	// pass stops and decides again on a fresher cache.
	Stale Outcome = "stale"
)

// Retries bounds how often a write re-reads and re-validates after losing
// an optimistic-lock race; a pass that still conflicts after that returns an
// error and its reconcile is retried with backoff.
const Retries = 5

// Confirm is called just before a patch is sent, after the copy was found
// to need one; false stops the write with the outcome Stale (nothing sent).
type Confirm func() (bool, error)

// Mutate checks the precondition on the copy the write is validated against
// (fresh or cached) and changes that copy; it returns false when the precondition does
// not hold (nothing is written, the outcome is Raced).
type Mutate func() (bool, error)

// WriteFromCache decides on obj as given — a cached copy — instead of a
// fresh read: the precondition is checked on that copy and the patch carries
// its resourceVersion, so the write lands only on the very object the
// decision saw. A copy the server has moved past earns a 409 and the outcome
// Stale, with nothing read and nothing written: the caller stops its pass
// and decides again once its cache has caught up, which is what a fresh read
// would have bought at the price of a GET per write
// (docs/design.md#cache-based-writes). When the copy already satisfies the
// change, nothing is sent at all. A copy without a resourceVersion (an
// object the caller never observed) cannot lock and is written as Write does.
//
// confirm, when not nil, is called just before a patch is sent: the
// caller's chance to make sure what the write depends on beyond this
// object still holds.
func WriteFromCache(ctx context.Context, fresh client.Reader, writer client.Writer, obj client.Object, mutate Mutate, confirm Confirm) (Outcome, error) {
	if obj.GetResourceVersion() == "" {
		return write(ctx, fresh, writer, obj, mutate, confirm)
	}
	out, err := attempt(ctx, writer, obj, mutate, confirm)
	if apierrors.IsConflict(err) {
		return Stale, nil
	}
	return out, err
}

// Write re-reads obj through fresh, lets mutate validate and change it, and
// merge-patches the difference with a resourceVersion precondition through
// writer. On a conflict it starts over from a fresh read, so the outcome
// always describes the copy the write was validated against.
func Write(ctx context.Context, fresh client.Reader, writer client.Writer, obj client.Object, mutate Mutate) (Outcome, error) {
	return write(ctx, fresh, writer, obj, mutate, nil)
}

func write(ctx context.Context, fresh client.Reader, writer client.Writer, obj client.Object, mutate Mutate, confirm Confirm) (Outcome, error) {
	key := client.ObjectKeyFromObject(obj)
	for range Retries {
		if err := fresh.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) {
				return Gone, nil
			}
			return "", fmt.Errorf("reading %s: %w", key, err)
		}
		out, err := attempt(ctx, writer, obj, mutate, confirm)
		if !apierrors.IsConflict(err) {
			return out, err
		}
	}
	return "", fmt.Errorf("writing %s: still conflicting after %d fresh reads", key, Retries)
}

// attempt validates and changes obj through mutate and patches the
// difference with obj's resourceVersion. A conflict is returned as the API
// error itself for the caller to judge; every other failure is wrapped.
func attempt(ctx context.Context, writer client.Writer, obj client.Object, mutate Mutate, confirm Confirm) (Outcome, error) {
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
	if confirm != nil {
		if ok, err := confirm(); err != nil || !ok {
			return Stale, err
		}
	}
	err = writer.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	switch {
	case err == nil:
		return Claimed, nil
	case apierrors.IsNotFound(err):
		return Gone, nil
	case apierrors.IsConflict(err):
		return "", err
	}
	return "", fmt.Errorf("patching %s: %w", client.ObjectKeyFromObject(obj), err)
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
