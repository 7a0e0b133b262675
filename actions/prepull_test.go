package actions

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
)

const prePullName = "pp-" + claimA

func newPrePull() *corev1.Pod {
	p := mkPod(phNS, prePullName, hostNode, map[string]string{v1alpha1.LabelPrePullFor: claimA})
	p.UID = ""
	p.Status = corev1.PodStatus{}
	p.Spec.Containers = []corev1.Container{{Name: "image-1", Image: "docker.io/library/nginx:1.25"}, {Name: "image-2", Image: "docker.io/library/redis:7"}}
	return p
}

func TestPrePullEnsureCreatesThePodOnceAndSaysSo(t *testing.T) {
	e := newEnv(t)
	targets := e.targets()
	targets.NewPrePull = []*corev1.Pod{newPrePull()}
	res, err := step(e.pass(targets), ActionPrePullEnsure, nil)
	if err != nil || res.Outcome != Done || !res.Changed || res.PrePullImages != 2 {
		t.Fatalf("%s changed=%v images=%d %v: want a create of 2 images that took effect", res.Outcome, res.Changed, res.PrePullImages, err)
	}
	got := &corev1.Pod{}
	if err := e.base.Get(ctxb, client.ObjectKey{Namespace: phNS, Name: prePullName}, got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.NodeName != hostNode || len(got.Spec.Containers) != 2 {
		t.Fatalf("created %+v, not the Pod the pass built", got.Spec)
	}
	if targets.NewPrePull[0].ResourceVersion != "" {
		t.Fatal("the create wrote into Targets.NewPrePull")
	}
	// the cache has not seen it yet: a second pass's create finds it, and
	// is not the one that announces
	after := e.state()
	res, err = step(e.pass(targets), ActionPrePullEnsure, nil)
	if err != nil || res.Outcome != Done || res.Changed {
		t.Fatalf("second run: %s changed=%v %v: AlreadyExists is done, unchanged", res.Outcome, res.Changed, err)
	}
	if e.state() != after {
		t.Fatal("second run changed the store")
	}
}

func TestPrePullEnsureWritesNothingWhenThePodIsObservedOrNoneWasBuilt(t *testing.T) {
	e := newEnv(t)
	observed := e.targets()
	observed.PrePull = []*corev1.Pod{newPrePull()}
	if res, err := step(e.pass(observed), ActionPrePullEnsure, nil); err != nil || res.Changed || res.Did != "pre-pull Pod exists" {
		t.Fatalf("observed: %q changed=%v %v", res.Did, res.Changed, err)
	}
	if res, err := step(e.pass(e.targets()), ActionPrePullEnsure, nil); err != nil || res.Changed || res.Did != "no pre-pull Pod to create" {
		t.Fatalf("none built: %q changed=%v %v", res.Did, res.Changed, err)
	}
	if len(e.writes) != 0 {
		t.Fatalf("writes %v", e.writes)
	}
}

func TestPrePullEnsureCreateErrorIsWrapped(t *testing.T) {
	e := newEnv(t)
	e.onCreate = func(client.Object) error { return apierrors.NewServiceUnavailable("etcd is away") }
	targets := e.targets()
	targets.NewPrePull = []*corev1.Pod{newPrePull()}
	if _, err := step(e.pass(targets), ActionPrePullEnsure, nil); err == nil || !strings.Contains(err.Error(), "creating pre-pull Pod "+phNS+"/"+prePullName) {
		t.Fatalf("error %v", err)
	}
}

// A refusal (admission, quota, Pod Security) is no error that would back
// the pass off past the phase's timeout: the step reports it for
// PrePullRefused and changes nothing.
func TestPrePullEnsureReportsARefusal(t *testing.T) {
	for _, refusal := range []error{
		apierrors.NewForbidden(corev1.Resource("pods"), prePullName, errors.New("exceeded quota: requests.cpu must be specified")),
		apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), prePullName, nil),
		apierrors.NewBadRequest("admission webhook denied the request"),
	} {
		e := newEnv(t)
		e.onCreate = func(client.Object) error { return refusal }
		targets := e.targets()
		targets.NewPrePull = []*corev1.Pod{newPrePull()}
		res, err := step(e.pass(targets), ActionPrePullEnsure, nil)
		if err != nil || res.Outcome != Done || res.Changed || res.PrePullRefused != phNS+"/"+prePullName+": "+refusal.Error() {
			t.Errorf("%v: %s changed=%v refused=%q %v", refusal, res.Outcome, res.Changed, res.PrePullRefused, err)
		}
	}
}

func TestPrePullDeleteDeletesTheObservedPodAtOnce(t *testing.T) {
	e := newEnv(t, mkPod(phNS, prePullName, hostNode, nil))
	targets := e.targets()
	targets.PrePull = []*corev1.Pod{mkPod(phNS, prePullName, hostNode, nil)}
	if res, err := step(e.pass(targets), ActionPrePullDelete, nil); err != nil || res.Outcome != Done {
		t.Fatalf("%s %v", res.Outcome, err)
	}
	if e.exists(mkPod(phNS, prePullName, "", nil)) {
		t.Fatal("pre-pull Pod not deleted")
	}
	d := e.deletes[0]
	if d.GracePeriodSeconds == nil || *d.GracePeriodSeconds != 0 || d.Preconditions == nil || d.Preconditions.UID == nil || *d.Preconditions.UID != targets.PrePull[0].UID {
		t.Fatalf("delete options %+v: want grace 0 and the observed UID as precondition", d)
	}
	if res, err := step(e.pass(targets), ActionPrePullDelete, nil); err != nil || res.Outcome != Done {
		t.Fatalf("second run: %s %v", res.Outcome, err)
	}
}

// A Pod recreated under the same name by a later attempt is not the one the
// pass observed: the UID precondition keeps it.
func TestPrePullDeleteLeavesAPodItDidNotObserve(t *testing.T) {
	e := newEnv(t, mkPod(phNS, prePullName, hostNode, nil))
	targets := e.targets()
	targets.PrePull = []*corev1.Pod{mkPod(phNS, prePullName, hostNode, nil)}
	targets.PrePull[0].UID = types.UID("an-earlier-pod")
	if res, err := step(e.pass(targets), ActionPrePullDelete, nil); err != nil || res.Outcome != Done {
		t.Fatalf("%s %v: a Pod that is not the observed one is as good as gone", res.Outcome, err)
	}
	if !e.exists(mkPod(phNS, prePullName, "", nil)) {
		t.Fatal("deleted a Pod the pass never observed")
	}
	if res, err := step(e.pass(e.targets()), ActionPrePullDelete, nil); err != nil || res.Did != "pre-pull Pod already gone" {
		t.Fatalf("not observed: %q %v", res.Did, err)
	}
}

func TestPrePullRecordIsWrittenOnceWhileTheAnchorNamesTheRotation(t *testing.T) {
	rec := &v1alpha1.PrePullRecord{Ended: v1alpha1.PrePullFailed, Wait: 95 * time.Second, Pulled: 2, Failed: 1, Skipped: 3}
	for _, tc := range []struct {
		name string
		pool map[string]string
		out  Outcome
		want string
	}{
		{"recorded", ann(keyAnchor, claimA), Claimed, rec.String()},
		{"already recorded by another pass", ann(keyAnchor, claimA, v1alpha1.AnnotationPrePull, `{"ended":"timeout"}`), Raced, `{"ended":"timeout"}`},
		{"the anchor names another rotation", ann(keyAnchor, "claim-b"), Raced, ""},
		{"no anchor", nil, Raced, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, mkPool(poolName, tc.pool))
			targets := e.targets()
			targets.PrePullRecord, targets.PrePullFailed = rec, []string{"quay.io/org/private:1"}
			res, err := step(e.pass(targets), ActionPrePullRecord, nil)
			if err != nil || res.Outcome != tc.out {
				t.Fatalf("%s %v, want %s", res.Outcome, err, tc.out)
			}
			if (res.PrePull != nil) != (tc.out == Claimed) {
				t.Errorf("PrePull reported %+v for outcome %s", res.PrePull, res.Outcome)
			}
			if res.PrePull != nil && (res.PrePull.Record != *rec || len(res.PrePull.FailedImages) != 1) {
				t.Errorf("reported %+v", res.PrePull)
			}
			if got := e.pool(poolName).Annotations[v1alpha1.AnnotationPrePull]; got != tc.want {
				t.Errorf("prepull %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPrePullRecordOnSlotTwoUsesItsKeys(t *testing.T) {
	rec := &v1alpha1.PrePullRecord{Ended: v1alpha1.PrePullSucceeded, Wait: time.Minute, Pulled: 1}
	e := newEnv(t, mkPool(poolName, ann(v1alpha1.Slot(2).Key(keyAnchor), claimA, keyAnchor, "claim-b")))
	targets := e.targets()
	targets.Slot, targets.PrePullRecord = 2, rec
	if res, err := step(e.pass(targets), ActionPrePullRecord, nil); err != nil || res.Outcome != Claimed {
		t.Fatalf("%s %v", res.Outcome, err)
	}
	a := e.pool(poolName).Annotations
	if a[v1alpha1.Slot(2).Key(v1alpha1.AnnotationPrePull)] != rec.String() || a[v1alpha1.AnnotationPrePull] != "" {
		t.Fatalf("annotations %v: want the record under slot 2's key only", a)
	}
}

func TestPrePullRecordWithoutAnObservedPhaseErrors(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA)))
	if _, err := step(e.pass(e.targets()), ActionPrePullRecord, nil); err == nil {
		t.Fatal("recorded a phase the pass never observed")
	}
	if len(e.writes) != 0 {
		t.Fatalf("writes %v", e.writes)
	}
}

// The record is cleared with the rest of the rotation's keys.
func TestThePrePullRecordIsRotationScoped(t *testing.T) {
	for _, k := range v1alpha1.Slot(3).RotationScoped() {
		if k == v1alpha1.Slot(3).Key(v1alpha1.AnnotationPrePull) {
			return
		}
	}
	t.Fatal("noderotation.io/prepull is not cleared with the anchor")
}

// With usePullSecrets, the rotation has a Pod per namespace: each one
// missing is created, and the step reports the images of all.
func TestPrePullEnsureCreatesEachPodMissing(t *testing.T) {
	e := newEnv(t)
	elsewhere := newPrePull()
	elsewhere.Namespace = "team-a"
	targets := e.targets()
	targets.NewPrePull = []*corev1.Pod{newPrePull(), elsewhere}
	res, err := step(e.pass(targets), ActionPrePullEnsure, nil)
	if err != nil || !res.Changed || res.PrePullImages != 4 {
		t.Fatalf("%q changed=%v images=%d %v: want both created, 4 images", res.Did, res.Changed, res.PrePullImages, err)
	}
	for _, ns := range []string{phNS, "team-a"} {
		if !e.exists(mkPod(ns, prePullName, "", nil)) {
			t.Errorf("no pre-pull Pod in %s", ns)
		}
	}
}

// A rollback deletes the placeholder, and with it the rotation's pre-pull
// Pods: those outside its namespace, which cannot be its dependents, right
// after it; the one beside it is left to the garbage collector.
func TestPlaceholderDeleteTakesThePrePullPodsElsewhereWithIt(t *testing.T) {
	elsewhere := mkPod("team-a", prePullName, hostNode, nil)
	e := newEnv(t, mkPod(phNS, "ph-"+claimA, hostNode, nil), mkPod(phNS, prePullName, hostNode, nil), elsewhere.DeepCopy())
	targets := e.targets()
	targets.Placeholder = mkPod(phNS, "ph-"+claimA, hostNode, nil)
	targets.PrePull = []*corev1.Pod{mkPod(phNS, prePullName, hostNode, nil), elsewhere}
	if res, err := step(e.pass(targets), "placeholder-delete", nil); err != nil || res.Outcome != Done {
		t.Fatalf("%s %v", res.Outcome, err)
	}
	want := []string{"delete Pod/" + phNS + "/ph-" + claimA, "delete Pod/team-a/" + prePullName}
	if !slices.Equal(e.writes, want) {
		t.Fatalf("writes %q, want %q", e.writes, want)
	}
	// the placeholder already gone, what is left elsewhere is still deleted
	e2 := newEnv(t, elsewhere.DeepCopy())
	targets.Placeholder = nil
	if res, err := step(e2.pass(targets), "placeholder-delete", nil); err != nil || res.Did != "placeholder already gone; deleted pre-pull Pod team-a/"+prePullName || e2.exists(elsewhere) {
		t.Fatalf("%q %v: want team-a's Pod deleted", res.Did, err)
	}
}

// Two passes that both observed no Pod race their creates: each makes the
// Pods the other has not yet, and only the one that made the first says
// PrePullStarted, for every image of the rotation.
func TestPrePullEnsureOnlyTheCreatorOfTheFirstPodAnnounces(t *testing.T) {
	elsewhere := newPrePull()
	elsewhere.Namespace = "team-a"
	e := newEnv(t)
	targets := e.targets()
	targets.NewPrePull = []*corev1.Pod{newPrePull(), elsewhere}
	// another pass made the first Pod already
	if err := e.base.Create(ctxb, newPrePull()); err != nil {
		t.Fatal(err)
	}
	res, err := step(e.pass(targets), ActionPrePullEnsure, nil)
	if err != nil || res.Changed || res.PrePullImages != 0 || !e.exists(mkPod("team-a", prePullName, "", nil)) {
		t.Fatalf("%q changed=%v images=%d %v: want team-a's Pod made, nothing to announce", res.Did, res.Changed, res.PrePullImages, err)
	}
	e2 := newEnv(t)
	res, err = step(e2.pass(targets), ActionPrePullEnsure, nil)
	if err != nil || !res.Changed || res.PrePullImages != 4 {
		t.Fatalf("%q changed=%v images=%d %v: want the first Pod's maker to announce all 4 images", res.Did, res.Changed, res.PrePullImages, err)
	}
}

// Every refused Pod is named, with its namespace.
func TestPrePullEnsureNamesEveryRefusal(t *testing.T) {
	elsewhere := newPrePull()
	elsewhere.Namespace = "team-a"
	e := newEnv(t)
	e.onCreate = func(obj client.Object) error {
		return apierrors.NewForbidden(corev1.Resource("pods"), obj.GetName(), errors.New("quota in "+obj.GetNamespace()))
	}
	targets := e.targets()
	targets.NewPrePull = []*corev1.Pod{newPrePull(), elsewhere}
	res, err := step(e.pass(targets), ActionPrePullEnsure, nil)
	if err != nil || res.Changed || !strings.Contains(res.PrePullRefused, phNS+"/"+prePullName+": ") || !strings.Contains(res.PrePullRefused, "team-a/"+prePullName+": ") {
		t.Fatalf("refused %q %v: want both named", res.PrePullRefused, err)
	}
}

// draining.prepull's mirror elects (rules version 17): a pass whose pool
// copy predates another pass's record of the phase's end — which deleted
// the Pods next — goes stale instead of creating a Pod again.
func TestAStalePrePullPassCreatesNothing(t *testing.T) {
	e := newEnv(t, mkPool(poolName, ann(keyAnchor, claimA, keyMirror, "draining", keyDraining, "2026-11-30T09:00:00Z")))
	targets := e.targets()
	targets.NewPrePull = []*corev1.Pod{newPrePull()}
	prePull := engine.Decision{Transition: "draining.prepull", Steps: []engine.Step{
		{Action: "pool-mirror", Elect: true, Args: map[string]any{"drainingAt": true}},
		{Action: ActionPrePullEnsure},
	}}
	update(t, e.base, mkPool(poolName, nil), func(p *karpv1.NodePool) {
		p.Annotations[v1alpha1.AnnotationPrePull] = v1alpha1.PrePullRecord{Ended: v1alpha1.PrePullSucceeded}.String()
	})
	ran, err := Run(ctxb, e.pass(targets), prePull)
	if !errors.Is(err, ErrStale) || ran.Owned {
		t.Fatalf("ran %+v err %v, want stale", ran, err)
	}
	if e.exists(newPrePull()) {
		t.Fatal("a stale pass created the pre-pull Pod again")
	}
}

// An earlier attempt's Pod holds the name: it is deleted (the one
// observed) before the create that replaces it.
func TestPrePullEnsureReplacesAnEarlierAttemptsPod(t *testing.T) {
	earlier := mkPod(phNS, prePullName, hostNode, nil)
	earlier.UID = "earlier-uid"
	e := newEnv(t, earlier.DeepCopy())
	targets := e.targets()
	targets.PrePullStale, targets.NewPrePull = []*corev1.Pod{earlier}, []*corev1.Pod{newPrePull()}
	res, err := step(e.pass(targets), ActionPrePullEnsure, nil)
	if err != nil || !res.Changed {
		t.Fatalf("%q changed=%v %v", res.Did, res.Changed, err)
	}
	if want := []string{"delete Pod/" + phNS + "/" + prePullName, "create Pod/" + phNS + "/" + prePullName}; !slices.Equal(e.writes, want) {
		t.Fatalf("writes %q, want %q", e.writes, want)
	}
}

// The first Pod refused: the pass that made the next one says
// PrePullStarted, for the images of the Pods the API server took.
func TestPrePullEnsureAnnouncesFromTheFirstPodTaken(t *testing.T) {
	elsewhere := newPrePull()
	elsewhere.Namespace = "team-a"
	elsewhere.Spec.Containers = elsewhere.Spec.Containers[:1]
	e := newEnv(t)
	e.onCreate = func(obj client.Object) error {
		if obj.GetNamespace() == phNS {
			return apierrors.NewForbidden(corev1.Resource("pods"), obj.GetName(), errors.New("quota"))
		}
		return nil
	}
	targets := e.targets()
	targets.NewPrePull = []*corev1.Pod{newPrePull(), elsewhere}
	res, err := step(e.pass(targets), ActionPrePullEnsure, nil)
	if err != nil || !res.Changed || res.PrePullImages != 1 || res.PrePullRefused == "" {
		t.Fatalf("%q changed=%v images=%d refused=%q %v: want team-a's one image announced, the other refused", res.Did, res.Changed, res.PrePullImages, res.PrePullRefused, err)
	}
}
