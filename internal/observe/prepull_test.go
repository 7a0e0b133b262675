package observe

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/prepull"
)

// images gives a Pod's one container an image.
func images(ref string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Image = ref }
}

// onSurgeNode is the placeholder of general-a, Running on node-b.
func onSurgeNode() *corev1.Pod {
	p := placeholderPod("general-a", "node-b")
	p.UID = types.UID("placeholder-uid")
	p.Status.Phase = corev1.PodRunning
	return p
}

func prePullPod(mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: prepull.PodName("general-a"),
		Labels:          map[string]string{v1alpha1.LabelPrePullFor: "general-a", v1alpha1.LabelManagedBy: v1alpha1.ManagedBy},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "nrc-surge-general-a", UID: "placeholder-uid"}}}}
	p.Spec.NodeName = "node-b"
	p.Spec.Containers = []corev1.Container{{Name: "image-1", Image: "docker.io/library/nginx:1.25"}, {Name: "image-2", Image: "docker.io/library/redis:7"}}
	p.Status.Phase = corev1.PodRunning
	for _, m := range mods {
		m(p)
	}
	return p
}

// observePrePull observes pool general among objs with the phase turned
// on: the observation's pre-pull part is made again with those settings
// (the fixture's policy leaves it off).
func observePrePull(t *testing.T, objs ...client.Object) *Observation {
	t.Helper()
	return observePrePullWith(t, observerOn(newClient(t, nil, objs...), now))
}

// observePrePullWith is observePrePull through the observer o.
func observePrePullWith(t *testing.T, o *Observer) *Observation {
	t.Helper()
	obs, err := o.Observe(context.Background(), "general", NoCap)
	if err != nil || obs == nil {
		t.Fatalf("observe: %v", err)
	}
	obs.PolicyErr = nil
	obs.Settings.PrePull = policy.PrePull{Enabled: true, Timeout: 10 * time.Minute, MaxImages: 20}
	obs.PrePull = PrePull{}
	if err := o.prePull(context.Background(), obs); err != nil {
		t.Fatal(err)
	}
	return obs
}

// statuses gives the pre-pull Pod's two containers their states: "" runs,
// anything else is the waiting reason.
func statuses(reasons ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = nil
		for i, r := range reasons {
			st := corev1.ContainerStatus{Name: p.Spec.Containers[i].Name, Image: p.Spec.Containers[i].Image}
			if r == "" {
				st.State.Running = &corev1.ContainerStateRunning{}
			} else {
				st.State.Waiting = &corev1.ContainerStateWaiting{Reason: r}
			}
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, st)
		}
	}
}

func movingWorkloads() []client.Object {
	return []client.Object{
		pod("app-1", "node-a", "500m", images("nginx:1.25")),
		pod("app-2", "node-a", "1", images("redis:7")),
		pod("ds-1", "node-a", "200m", daemonSetOwned, images("fluent-bit:3")),
	}
}

func surgeClaim(state string, mods ...func(*karpv1.NodeClaim)) *karpv1.NodeClaim {
	return nodeClaim("general-a", 40*time.Minute, "node-a", append([]func(*karpv1.NodeClaim){inState(state), startedAt(now.Add(-5 * time.Minute))}, mods...)...)
}

func drainingPool(extra ...string) *karpv1.NodePool {
	return nodePool(anchored("general-a"), poolAnnotations(append([]string{v1alpha1.AnnotationActiveRotationState, v1alpha1.StateDraining,
		v1alpha1.AnnotationDrainingAt, stamp(now.Add(-90 * time.Second))}, extra...)...))
}

func TestAtSurgeReadyThePhaseAsksForAPodWhenAnImageIsMissing(t *testing.T) {
	obs := observePrePull(t, append(movingWorkloads(), nodePool(anchored("general-a")), governing(),
		surgeClaim(v1alpha1.StatePending), node("node-a"), node("node-b"), onSurgeNode())...)
	if got := obs.PrePull.State(); got != prePullAbsent {
		t.Fatalf("surge.prePull %q, want %q", got, prePullAbsent)
	}
	var pulled []string
	for _, img := range obs.PrePull.Images {
		if img.Fate == prepull.Pull {
			pulled = append(pulled, img.Ref)
		}
	}
	if len(pulled) != 2 || pulled[0] != "docker.io/library/nginx:1.25" || pulled[1] != "docker.io/library/redis:7" {
		t.Errorf("pulls %q: want the two moving Pods' images, not the DaemonSet's", pulled)
	}
	if obs.PrePull.Record != nil {
		t.Errorf("a record before the draining state: %+v", obs.PrePull.Record)
	}
}

func TestASurgeNodeThatHasEveryImageNeedsNoPhase(t *testing.T) {
	has := node("node-b", func(n *corev1.Node) {
		n.Status.Images = []corev1.ContainerImage{{Names: []string{"docker.io/library/nginx:1.25", "docker.io/library/redis:7"}}}
	})
	obs := observePrePull(t, append(movingWorkloads(), nodePool(anchored("general-a")), governing(),
		surgeClaim(v1alpha1.StatePending), node("node-a"), has, onSurgeNode())...)
	if got := obs.PrePull.State(); got != "" {
		t.Fatalf("surge.prePull %q: nothing to pull is no phase", got)
	}
}

func TestAWindowsSurgeNodeGetsNoPhase(t *testing.T) {
	windows := node("node-b", func(n *corev1.Node) { n.Labels[corev1.LabelOSStable] = "windows" })
	obs := observePrePull(t, append(movingWorkloads(), nodePool(anchored("general-a")), governing(),
		surgeClaim(v1alpha1.StatePending), node("node-a"), windows, onSurgeNode())...)
	if got := obs.PrePull.State(); got != "" {
		t.Fatalf("surge.prePull %q on a Windows node", got)
	}
}

func TestWhileDrainingThePhaseFollowsItsPod(t *testing.T) {
	base := func(extra ...client.Object) []client.Object {
		return append(append(movingWorkloads(), governing(), node("node-a"), node("node-b"), onSurgeNode()), extra...)
	}
	for _, tc := range []struct {
		name  string
		objs  []client.Object
		state string
		ended string
	}{
		{"no Pod yet", base(drainingPool(), surgeClaim(v1alpha1.StateDraining)), prePullAbsent, v1alpha1.PrePullTimeout},
		{"its Pod pulling", base(drainingPool(), surgeClaim(v1alpha1.StateDraining), prePullPod()), prePullRunning, v1alpha1.PrePullTimeout},
		{"its Pod succeeded", base(drainingPool(), surgeClaim(v1alpha1.StateDraining), prePullPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })), prePullEnded, v1alpha1.PrePullSucceeded},
		{"its Pod failed", base(drainingPool(), surgeClaim(v1alpha1.StateDraining), prePullPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed })), prePullEnded, v1alpha1.PrePullFailed},
		// an earlier attempt's Pod is replaced, not waited on nor counted
		{"an earlier attempt's Pod", base(drainingPool(), surgeClaim(v1alpha1.StateDraining), prePullPod(func(p *corev1.Pod) { p.OwnerReferences[0].UID = "earlier" })), prePullAbsent, v1alpha1.PrePullTimeout},
		{"a Pod on another node", base(drainingPool(), surgeClaim(v1alpha1.StateDraining), prePullPod(func(p *corev1.Pod) { p.Spec.NodeName = "node-c" })), prePullAbsent, v1alpha1.PrePullTimeout},
		{"every image pulled, the no-ops running", base(drainingPool(), surgeClaim(v1alpha1.StateDraining), prePullPod(statuses("", ""))), prePullEnded, v1alpha1.PrePullSucceeded},
		{"an image that cannot be pulled, the rest pulled", base(drainingPool(), surgeClaim(v1alpha1.StateDraining), prePullPod(statuses("", "InvalidImageName"))), prePullEnded, v1alpha1.PrePullFailed},
		{"an image the kubelet retries, the rest pulled", base(drainingPool(), surgeClaim(v1alpha1.StateDraining), prePullPod(statuses("", "ImagePullBackOff"))), prePullRunning, v1alpha1.PrePullTimeout},
		{"an image still being pulled", base(drainingPool(), surgeClaim(v1alpha1.StateDraining), prePullPod(statuses("", "ContainerCreating"))), prePullRunning, v1alpha1.PrePullTimeout},
		{"Karpenter deleted the claim", base(drainingPool(), surgeClaim(v1alpha1.StateDraining, func(c *karpv1.NodeClaim) {
			c.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Second)}
			c.Finalizers = []string{karpv1.TerminationFinalizer}
		}), prePullPod()), prePullRunning, v1alpha1.PrePullCut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := observePrePull(t, tc.objs...)
			if got := obs.PrePull.State(); got != tc.state {
				t.Errorf("surge.prePull %q, want %q", got, tc.state)
			}
			r := obs.PrePull.Record
			if r == nil || r.Ended != tc.ended || r.Wait != 90*time.Second {
				t.Fatalf("record %+v, want ended %s after 1m30s", r, tc.ended)
			}
		})
	}
}

// The placeholder the Pod depends on is gone (deleted by hand): the phase
// is cut, and its record says so.
func TestAPhaseWhosePlaceholderIsGoneIsCut(t *testing.T) {
	obs := observePrePull(t, append(movingWorkloads(), drainingPool(), governing(), surgeClaim(v1alpha1.StateDraining),
		node("node-a"), node("node-b"), prePullPod())...)
	if r := obs.PrePull.Record; r == nil || r.Ended != v1alpha1.PrePullCut {
		t.Errorf("record %+v, want cut", r)
	}
}

func TestAKeptPlaceholderWithNothingLeftToPullEndsThePhase(t *testing.T) {
	has := node("node-b", func(n *corev1.Node) {
		n.Status.Images = []corev1.ContainerImage{{Names: []string{"docker.io/library/nginx:1.25", "docker.io/library/redis:7"}}}
	})
	obs := observePrePull(t, append(movingWorkloads(), drainingPool(), governing(), surgeClaim(v1alpha1.StateDraining),
		node("node-a"), has, onSurgeNode())...)
	if got := obs.PrePull.State(); got != prePullEnded {
		t.Fatalf("surge.prePull %q, want %q: the placeholder was kept for a phase that has nothing to do", got, prePullEnded)
	}
	if r := obs.PrePull.Record; r == nil || r.Ended != v1alpha1.PrePullNothing || r.Skipped != 2 {
		t.Errorf("record %+v, want nothing, 2 skipped", r)
	}
}

// A terminating placeholder was not kept for a phase: surge-ready deleted
// it with the phase off or nothing to pull.
func TestATerminatingPlaceholderBeginsNoPhase(t *testing.T) {
	going := onSurgeNode()
	going.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Second)}
	going.Finalizers = []string{"test/keep"}
	obs := observePrePull(t, append(movingWorkloads(), drainingPool(), governing(), surgeClaim(v1alpha1.StateDraining),
		node("node-a"), node("node-b"), going)...)
	if got := obs.PrePull.State(); got != "" {
		t.Fatalf("surge.prePull %q, want none", got)
	}
}

func TestOnceRecordedOrTurnedOffThePhaseIsNotObserved(t *testing.T) {
	rec := v1alpha1.PrePullRecord{Ended: v1alpha1.PrePullSucceeded, Wait: time.Minute}.String()
	obs := observePrePull(t, append(movingWorkloads(), drainingPool(v1alpha1.AnnotationPrePull, rec), governing(),
		surgeClaim(v1alpha1.StateDraining), node("node-a"), node("node-b"), onSurgeNode(), prePullPod())...)
	if obs.PrePull.Record != nil || obs.PrePull.State() != "" || obs.PrePull.Images != nil {
		t.Errorf("recorded phase observed: %+v", obs.PrePull)
	}
	off := observeNow(t, append(movingWorkloads(), drainingPool(), governing(), surgeClaim(v1alpha1.StateDraining),
		node("node-a"), node("node-b"), onSurgeNode(), prePullPod())...)
	if off.PrePull.Record != nil || off.Snapshot.Surge.PrePull != "" || off.Snapshot.Policy.PrePull || off.Snapshot.Policy.PrePullTimeout != 0 {
		t.Errorf("phase off: observed %+v, snapshot policy %+v", off.PrePull, off.Snapshot.Policy)
	}
	// its Pods are read all the same: a rollback deletes them whatever
	// became of the policy
	for _, o := range []*Observation{obs, off} {
		if len(o.PrePull.Pods) != 1 {
			t.Errorf("the rotation's Pods %v, want its one pre-pull Pod", o.PrePull.Pods)
		}
	}
}

// The cache drops a node's image list (cache.LeanNode): the selection reads
// the surge node from the API server, where the images are.
func TestTheSurgeNodesImagesAreReadFromTheAPIServer(t *testing.T) {
	objs := func(surgeNode *corev1.Node) []client.Object {
		return append(movingWorkloads(), nodePool(anchored("general-a")), governing(), surgeClaim(v1alpha1.StatePending),
			node("node-a"), surgeNode, onSurgeNode())
	}
	trimmed := node("node-b")
	full := node("node-b", func(n *corev1.Node) {
		n.Status.Images = []corev1.ContainerImage{{Names: []string{"docker.io/library/nginx:1.25", "docker.io/library/redis:7"}}}
	})
	obs := observePrePullWith(t, &Observer{Cache: newClient(t, nil, objs(trimmed)...), API: newClient(t, nil, objs(full)...), Namespace: ns,
		Clock: func() time.Time { return now }, Rules: shipped})
	if got := obs.PrePull.State(); got != "" {
		t.Errorf("surge.prePull %q: the node's images were read from the cache's trimmed copy", got)
	}
}

// With usePullSecrets, the redis Pod's image needs its imagePullSecrets:
// it is pulled by a Pod in that Pod's namespace ("apps"). Every Pod is
// created by the pass that finds none; the phase ends when every Pod
// ended, and a namespace whose Pod was never created (refused) is
// accounted for by the plan the Pods carry: its images failed, named.
func TestWithPullSecretsThePhaseFollowsAPodPerNamespace(t *testing.T) {
	withSecret := func(p *corev1.Pod) { p.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "apps-registry"}} }
	workloads := []client.Object{
		pod("app-1", "node-a", "500m", images("nginx:1.25")),
		pod("app-2", "node-a", "1", images("redis:7"), withSecret),
	}
	plan := func(p *corev1.Pod) {
		p.Annotations = map[string]string{"noderotation.io/prepull-plan": `{"` + ns + `":["docker.io/library/nginx:1.25"],"apps":["docker.io/library/redis:7"]}`}
	}
	home := prePullPod(func(p *corev1.Pod) { p.Spec.Containers = p.Spec.Containers[:1] }, plan, statuses(""))
	elsewhere := prePullPod(plan, func(p *corev1.Pod) {
		p.Namespace, p.OwnerReferences = "apps", nil
		p.Annotations[prepull.AttemptAnnotation] = "placeholder-uid"
		p.Spec.Containers = []corev1.Container{{Name: "image-1", Image: "docker.io/library/redis:7"}}
	})
	observe := func(allowed bool, objs ...client.Object) *Observation {
		o := observerOn(newClient(t, nil, append(append(workloads, governing(), node("node-a"), node("node-b"), onSurgeNode(),
			drainingPool(), surgeClaim(v1alpha1.StateDraining)), objs...)...), now)
		o.PullSecretsAllowed = allowed
		obs, err := o.Observe(context.Background(), "general", NoCap)
		if err != nil {
			t.Fatal(err)
		}
		obs.PolicyErr = nil
		obs.Settings.PrePull = policy.PrePull{Enabled: true, Timeout: 10 * time.Minute, MaxImages: 20, UsePullSecrets: true}
		obs.PrePull = PrePull{}
		if err := o.prePull(context.Background(), obs); err != nil {
			t.Fatal(err)
		}
		return obs
	}

	obs := observe(true)
	if obs.PrePull.State() != prePullAbsent || !slices.Equal(obs.PrePull.Missing, []string{ns, "apps"}) {
		t.Errorf("no Pod yet: %q, missing %q; want absent, the controller's namespace and apps", obs.PrePull.State(), obs.PrePull.Missing)
	}
	obs = observe(true, home, elsewhere)
	if obs.PrePull.State() != prePullRunning || len(obs.PrePull.Pods) != 2 || obs.PrePull.Pods[0].Namespace != ns || obs.PrePull.Images != nil {
		t.Errorf("both, one pulling: %q, Pods %d, selection %v; want running, the controller's first, no selection", obs.PrePull.State(), len(obs.PrePull.Pods), obs.PrePull.Images)
	}
	ended := elsewhere.DeepCopy()
	statuses("")(ended)
	obs = observe(true, home, ended)
	if r := obs.PrePull.Record; obs.PrePull.State() != prePullEnded || r == nil || r.Ended != v1alpha1.PrePullSucceeded || r.Pulled != 2 {
		t.Errorf("both ended: %q, record %+v; want ended, succeeded with 2 pulled", obs.PrePull.State(), r)
	}
	// an earlier attempt's Pod in apps, on the same surge node: told apart
	// by the attempt it names, it is not the phase's (the Pods are made
	// again, it deleted first); one made before the annotation existed is
	// told by its node alone
	earlier := elsewhere.DeepCopy()
	earlier.Annotations[prepull.AttemptAnnotation] = "an-earlier-placeholder"
	obs = observe(true, earlier)
	if obs.PrePull.State() != prePullAbsent || len(obs.PrePull.Pods) != 0 || len(obs.PrePull.Stale) != 1 || !slices.Equal(obs.PrePull.Missing, []string{ns, "apps"}) {
		t.Errorf("an earlier attempt's Pod: %q, Pods %d, stale %d, missing %q; want absent, it stale, both to make", obs.PrePull.State(), len(obs.PrePull.Pods), len(obs.PrePull.Stale), obs.PrePull.Missing)
	}
	unmarked := elsewhere.DeepCopy()
	delete(unmarked.Annotations, prepull.AttemptAnnotation)
	if obs = observe(true, home, unmarked); len(obs.PrePull.Pods) != 2 || len(obs.PrePull.Stale) != 0 {
		t.Errorf("a Pod without the attempt: Pods %d, stale %d; want it the attempt's", len(obs.PrePull.Pods), len(obs.PrePull.Stale))
	}
	// apps' Pod refused: no Pod is created after the first pass's, so the
	// phase ends with the one that exists, apps' image failed and named
	obs = observe(true, home)
	if r := obs.PrePull.Record; obs.PrePull.State() != prePullEnded || len(obs.PrePull.Missing) != 0 || r == nil ||
		r.Ended != v1alpha1.PrePullFailed || r.Pulled != 1 || r.Failed != 1 || !slices.Equal(obs.PrePull.Failed, []string{"docker.io/library/redis:7"}) {
		t.Errorf("apps' Pod never created: %q, missing %q, record %+v, failed %q", obs.PrePull.State(), obs.PrePull.Missing, r, obs.PrePull.Failed)
	}
	// not allowed (no -prepull-use-pull-secrets): the image is skipped,
	// one Pod beside the placeholder is all the phase plans
	obs = observe(false)
	if !slices.Equal(obs.PrePull.Missing, []string{ns}) || prepull.Count(obs.PrePull.Images, prepull.NeedsSecrets) != 1 {
		t.Errorf("not allowed: missing %q, selection %+v; want the controller's namespace only, redis needsPullSecrets", obs.PrePull.Missing, obs.PrePull.Images)
	}
}
