package actions

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func newPlaceholder() *corev1.Pod {
	p := mkPod(phNS, "ph-"+claimA, "", map[string]string{labelPair: claimA})
	p.UID = ""
	p.Status = corev1.PodStatus{}
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}
	p.Spec.PriorityClassName = "rotation-placeholder"
	return p
}

func TestPlaceholderEnsureCreatesTheSizedPod(t *testing.T) {
	e := newEnv(t)
	targets := e.targets()
	targets.NewPlaceholder = newPlaceholder()
	res, err := step(e.pass(targets), "placeholder-ensure", nil)
	if err != nil || res.Outcome != Done {
		t.Fatalf("%s %v", res.Outcome, err)
	}
	if !res.Changed {
		t.Fatalf("a create that took effect reports no change: %s", res.Did)
	}
	got := &corev1.Pod{}
	if err := e.base.Get(ctxb, client.ObjectKey{Namespace: phNS, Name: "ph-" + claimA}, got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[labelPair] != claimA || got.Spec.PriorityClassName != "rotation-placeholder" ||
		got.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 1500 {
		t.Fatalf("created %+v, not the Pod the pass sized", got)
	}
	// the pass's own copy is not the one the create filled in
	if targets.NewPlaceholder.ResourceVersion != "" {
		t.Fatal("the create wrote into Targets.NewPlaceholder")
	}

	// idempotent: the same observation (placeholder not yet seen) again
	after := e.state()
	res, err = step(e.pass(targets), "placeholder-ensure", nil)
	if err != nil || res.Outcome != Done {
		t.Fatalf("second run: %s %v (AlreadyExists is done)", res.Outcome, err)
	}
	if e.state() != after {
		t.Fatal("second run changed the store")
	}
}

func TestPlaceholderEnsureObservedMeansNoCreate(t *testing.T) {
	e := newEnv(t)
	targets := e.targets()
	targets.Placeholder = newPlaceholder()
	targets.NewPlaceholder = newPlaceholder()
	res, err := step(e.pass(targets), "placeholder-ensure", nil)
	if err != nil || res.Did != "placeholder exists" {
		t.Fatalf("%q %v", res.Did, err)
	}
	if len(e.writes) != 0 {
		t.Fatalf("writes %v", e.writes)
	}
}

func TestPlaceholderEnsureWithoutASpecErrors(t *testing.T) {
	e := newEnv(t)
	_, err := step(e.pass(e.targets()), "placeholder-ensure", nil)
	if err == nil || !strings.Contains(err.Error(), "placeholder for "+claimA) {
		t.Fatalf("error %v", err)
	}
	if len(e.writes) != 0 {
		t.Fatalf("writes %v", e.writes)
	}
}

func TestPlaceholderEnsureCreateError(t *testing.T) {
	e := newEnv(t)
	e.onCreate = func(client.Object) error {
		return apierrors.NewForbidden(corev1.Resource("pods"), "ph", errors.New("quota"))
	}
	targets := e.targets()
	targets.NewPlaceholder = newPlaceholder()
	_, err := step(e.pass(targets), "placeholder-ensure", nil)
	if err == nil || !strings.Contains(err.Error(), "creating placeholder "+phNS+"/ph-"+claimA) {
		t.Fatalf("error %v", err)
	}
}

func TestPlaceholderDelete(t *testing.T) {
	e := newEnv(t, mkPod(phNS, "ph-"+claimA, hostNode, map[string]string{labelPair: claimA}))
	targets := e.targets()
	targets.Placeholder = mkPod(phNS, "ph-"+claimA, hostNode, nil)
	res, err := step(e.pass(targets), "placeholder-delete", nil)
	if err != nil || res.Outcome != Done {
		t.Fatalf("%s %v", res.Outcome, err)
	}
	if e.exists(mkPod(phNS, "ph-"+claimA, "", nil)) {
		t.Fatal("placeholder not deleted")
	}
	if len(e.deletes) != 1 || e.deletes[0].GracePeriodSeconds == nil || *e.deletes[0].GracePeriodSeconds != 0 {
		t.Fatalf("delete options %+v, want grace period 0", e.deletes)
	}
	if e.deletes[0].PropagationPolicy == nil || *e.deletes[0].PropagationPolicy != metav1.DeletePropagationBackground {
		t.Fatalf("propagation %v", e.deletes[0].PropagationPolicy)
	}
	// idempotent: the same observation again finds it gone
	if res, err := step(e.pass(targets), "placeholder-delete", nil); err != nil || res.Outcome != Done {
		t.Fatalf("second run: %s %v", res.Outcome, err)
	}
}

func TestPlaceholderDeleteNotObserved(t *testing.T) {
	e := newEnv(t, mkPod(phNS, "ph-"+claimA, hostNode, nil))
	res, err := step(e.pass(e.targets()), "placeholder-delete", nil)
	if err != nil || res.Did != "placeholder already gone" {
		t.Fatalf("%q %v", res.Did, err)
	}
	if len(e.writes) != 0 {
		t.Fatalf("writes %v", e.writes)
	}
}

func TestPlaceholderDeleteError(t *testing.T) {
	e := newEnv(t, mkPod(phNS, "ph-"+claimA, hostNode, nil))
	e.onDelete = func(client.Object) error { return errors.New("boom") }
	targets := e.targets()
	targets.Placeholder = mkPod(phNS, "ph-"+claimA, hostNode, nil)
	if _, err := step(e.pass(targets), "placeholder-delete", nil); err == nil || !strings.Contains(err.Error(), "deleting placeholder ph-"+claimA) {
		t.Fatalf("error %v", err)
	}
}
