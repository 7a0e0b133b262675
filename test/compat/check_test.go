package compat_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/internal/conditional"
)

var (
	poolGVK  = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodePool"}
	claimGVK = schema.GroupVersionKind{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaim"}
)

// check runs the controller's read and write paths against the
// karpenter.sh CRDs installed on c's API server and returns what failed,
// each problem naming the object and the path: every field of
// fields_test.go written and read back unchanged (a field the schema does
// not know is pruned), the typed client's decoding of both kinds, the
// annotation patches through internal/conditional, the claim's conditions
// through the status subresource, and the claim's delete with the
// preconditions actions/claim.go sends.
func check(ctx context.Context, c client.Client) []string {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	pool := object(poolGVK, "compat", poolFields)
	set(pool, []string{"spec", "template", "spec", "nodeClassRef"}, nodeClassRef())
	if err := c.Create(ctx, pool); err != nil {
		fail("NodePool compat: the API server refused it: %v", err)
		return problems
	}
	defer func() { _ = c.Delete(ctx, pool) }()
	problems = append(problems, readBack(ctx, c, "NodePool", pool, poolFields)...)
	typedPool := &karpv1.NodePool{}
	if err := c.Get(ctx, client.ObjectKey{Name: "compat"}, typedPool); err != nil {
		fail("NodePool compat: the typed client cannot read it: %v", err)
	} else if d := typedPool.Spec.Template.Spec.ExpireAfter.Duration; d == nil || *d != 336*time.Hour {
		fail("NodePool compat: the typed client reads spec.template.spec.expireAfter as %v, want 336h", d)
	}
	problems = append(problems, annotate(ctx, c, "NodePool", &karpv1.NodePool{}, "compat", poolAnnotations)...)

	claim := object(claimGVK, "compat-claim", claimFields)
	set(claim, []string{"spec", "nodeClassRef"}, nodeClassRef())
	if err := c.Create(ctx, claim); err != nil {
		fail("NodeClaim compat-claim: the API server refused it: %v", err)
		return problems
	}
	defer func() { _ = c.Delete(ctx, claim) }()
	problems = append(problems, readBack(ctx, c, "NodeClaim", claim, claimFields)...)
	for _, f := range claimStatusFields {
		set(claim, f.path, f.value)
	}
	set(claim, []string{"status", "conditions"}, conditions())
	if err := c.Status().Update(ctx, claim); err != nil {
		fail("NodeClaim compat-claim: the status subresource refused the status Karpenter writes: %v", err)
	} else {
		problems = append(problems, readBack(ctx, c, "NodeClaim", claim, claimStatusFields)...)
	}
	typedClaim := &karpv1.NodeClaim{}
	if err := c.Get(ctx, client.ObjectKey{Name: "compat-claim"}, typedClaim); err != nil {
		fail("NodeClaim compat-claim: the typed client cannot read it: %v", err)
	} else {
		for _, t := range claimConditions {
			if !hasTrueCondition(typedClaim, t) {
				fail("NodeClaim compat-claim: status.conditions lost the %s condition (read as %v)", t, typedClaim.Status.Conditions)
			}
		}
	}
	problems = append(problems, annotate(ctx, c, "NodeClaim", &karpv1.NodeClaim{}, "compat-claim", claimAnnotations)...)
	if err := c.Get(ctx, client.ObjectKey{Name: "compat-claim"}, typedClaim); err == nil {
		uid, rv := typedClaim.UID, typedClaim.ResourceVersion
		if err := c.Delete(ctx, typedClaim, client.Preconditions{UID: &uid, ResourceVersion: &rv}); err != nil {
			fail("NodeClaim compat-claim: the delete with UID and resourceVersion preconditions (actions/claim.go) failed: %v", err)
		}
	}
	return problems
}

// object is an unstructured GVK named name with every field set.
func object(gvk schema.GroupVersionKind, name string, fields []field) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	for _, f := range fields {
		set(u, f.path, f.value)
	}
	return u
}

func set(u *unstructured.Unstructured, path []string, value any) {
	if err := unstructured.SetNestedField(u.Object, deepCopy(value), path...); err != nil {
		panic(fmt.Sprintf("compat: setting %v: %v", path, err)) // a malformed table in this file
	}
}

// deepCopy copies a value of the tables, which SetNestedField would share.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range t {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// readBack reads the object again and names every field the server did
// not keep as written.
func readBack(ctx context.Context, c client.Client, kind string, u *unstructured.Unstructured, fields []field) []string {
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(u.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
		return []string{fmt.Sprintf("%s %s: reading it back: %v", kind, u.GetName(), err)}
	}
	var problems []string
	for _, f := range fields {
		v, found, err := unstructured.NestedFieldNoCopy(got.Object, f.path...)
		switch {
		case err != nil || !found:
			problems = append(problems, fmt.Sprintf("%s %s: %s was pruned: the CRD's schema has no such field (read by %s)", kind, u.GetName(), strings.Join(f.path, "."), f.why))
		case !reflect.DeepEqual(v, f.value):
			problems = append(problems, fmt.Sprintf("%s %s: %s was written %v and reads back %v (read by %s)", kind, u.GetName(), strings.Join(f.path, "."), f.value, v, f.why))
		}
	}
	return problems
}

// annotate writes the annotations as the controller does
// (conditional.Write: a fresh read, then a merge patch with the
// resourceVersion) and reads them back.
func annotate(ctx context.Context, c client.Client, kind string, obj client.Object, name string, annotations map[string]string) []string {
	obj.SetName(name)
	out, err := conditional.Write(ctx, c, c, obj, func() (bool, error) {
		for k, v := range annotations {
			conditional.SetAnnotation(obj, k, v)
		}
		return true, nil
	})
	if err != nil || out != conditional.Claimed {
		return []string{fmt.Sprintf("%s %s: the annotation patch ended %q: %v", kind, name, out, err)}
	}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, obj); err != nil {
		return []string{fmt.Sprintf("%s %s: reading it back: %v", kind, name, err)}
	}
	var problems []string
	for k, v := range annotations {
		if got := obj.GetAnnotations()[k]; got != v {
			problems = append(problems, fmt.Sprintf("%s %s: annotation %s reads back %q, want %q", kind, name, k, got, v))
		}
	}
	return problems
}

func nodeClassRef() map[string]any {
	return map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"}
}

// conditions: the claim's conditions as Karpenter writes them.
func conditions() []any {
	now := time.Now().UTC().Format(time.RFC3339)
	out := []any{}
	for _, t := range claimConditions {
		out = append(out, map[string]any{"type": t, "status": "True", "reason": t, "message": "", "lastTransitionTime": now})
	}
	return out
}

func hasTrueCondition(c *karpv1.NodeClaim, t string) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Status == "True"
		}
	}
	return false
}
