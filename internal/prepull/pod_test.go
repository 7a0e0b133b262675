package prepull

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	psa "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

func examplePod() Pod {
	return Pod{
		Namespace: "node-rotation-system", PriorityClass: "node-rotation-placeholder",
		Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule}},
		Installer:   "ghcr.io/noderotation/node-rotation-controller:0.4.0",
		Claim:       "general-abcde", Pool: "general", Node: "surge-node-1",
		Owner:   &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-general-abcde", UID: types.UID("placeholder-uid")}},
		Timeout: 10 * time.Minute,
		Images: []Image{
			{Ref: "docker.io/library/nginx:1.25", Fate: Pull},
			{Ref: "registry.internal/team/app:2", Fate: Excluded},
			{Ref: "ghcr.io/org/sidecar@sha256:" + sixtyFour, Fate: Pull},
			{Ref: "docker.io/library/busybox:latest", Fate: Present},
			{Ref: "quay.io/org/private:1", Fate: NeedsSecrets},
			{Ref: "docker.io/library/redis:7", Fate: Pull},
			{Ref: "docker.io/library/postgres:16", Fate: OverLimit},
		},
	}
}

const sixtyFour = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestThePodPullsExactlyTheImagesWhoseFateIsPullInTheirOrder(t *testing.T) {
	pod := examplePod().Build()
	var images, names []string
	for _, c := range pod.Spec.Containers {
		images = append(images, c.Image)
		names = append(names, c.Name)
		if !slices.Equal(c.Command, []string{noopPath, NoopArg}) || len(c.Args) != 0 {
			t.Errorf("container %s runs %q %q, want the installed no-op", c.Name, c.Command, c.Args)
		}
		if c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("container %s pulls %s, want IfNotPresent", c.Name, c.ImagePullPolicy)
		}
		if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != volume || c.VolumeMounts[0].MountPath != mountPath || !c.VolumeMounts[0].ReadOnly {
			t.Errorf("container %s mounts %+v, want the no-op's volume read-only at %s", c.Name, c.VolumeMounts, mountPath)
		}
		if c.Resources.Requests != nil || c.Resources.Limits != nil {
			t.Errorf("container %s asks for %+v; the Pod requests nothing, the placeholder holds the room", c.Name, c.Resources)
		}
	}
	want := []string{"docker.io/library/nginx:1.25", "ghcr.io/org/sidecar@sha256:" + sixtyFour, "docker.io/library/redis:7"}
	if !slices.Equal(images, want) {
		t.Errorf("images %q, want %q", images, want)
	}
	if !slices.Equal(names, []string{"image-1", "image-2", "image-3"}) {
		t.Errorf("container names %q", names)
	}
}

func TestNoPodWhenNothingIsToBePulled(t *testing.T) {
	p := examplePod()
	for i := range p.Images {
		if p.Images[i].Fate == Pull {
			p.Images[i].Fate = Present
		}
	}
	if pod := p.Build(); pod != nil {
		t.Errorf("with nothing to pull: a Pod with %d containers", len(pod.Spec.Containers))
	}
	p.Images = nil
	if pod := p.Build(); pod != nil {
		t.Errorf("with no images: a Pod with %d containers", len(pod.Spec.Containers))
	}
}

func TestThePodIsTheRotationsBoundToItsSurgeNodeAndRunsOnce(t *testing.T) {
	p := examplePod()
	pod := p.Build()
	if pod.Name != "nrc-prepull-general-abcde" || pod.Name != PodName(p.Claim) || pod.Namespace != p.Namespace {
		t.Errorf("Pod %s/%s", pod.Namespace, pod.Name)
	}
	for k, v := range map[string]string{v1alpha1.LabelPrePullFor: p.Claim, v1alpha1.LabelNodePool: p.Pool, "app.kubernetes.io/component": "prepull"} {
		if pod.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, pod.Labels[k], v)
		}
	}
	if _, ok := pod.Labels[v1alpha1.LabelSurgeFor]; ok {
		t.Errorf("the pre-pull Pod carries %s: it would be taken for a placeholder", v1alpha1.LabelSurgeFor)
	}
	s := pod.Spec
	if s.NodeName != p.Node || s.Affinity != nil || s.NodeSelector != nil {
		t.Errorf("nodeName %q, affinity %v, nodeSelector %v: want bound to %s and nothing else", s.NodeName, s.Affinity, s.NodeSelector, p.Node)
	}
	if s.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s", s.RestartPolicy)
	}
	if s.PriorityClassName != p.PriorityClass || !slices.Equal(s.Tolerations, p.Tolerations) {
		t.Errorf("priority class %q, tolerations %v: want the placeholder's", s.PriorityClassName, s.Tolerations)
	}
	if *s.AutomountServiceAccountToken || *s.EnableServiceLinks || *s.TerminationGracePeriodSeconds != 0 {
		t.Errorf("token %v, service links %v, grace %d", *s.AutomountServiceAccountToken, *s.EnableServiceLinks, *s.TerminationGracePeriodSeconds)
	}
	refs := pod.OwnerReferences
	if len(refs) != 1 || refs[0].Kind != "Pod" || refs[0].APIVersion != "v1" || refs[0].Name != p.Owner.Name || refs[0].UID != p.Owner.UID {
		t.Errorf("owner references %+v, want the placeholder", refs)
	}
	p.Owner = nil
	if refs := p.Build().OwnerReferences; refs != nil {
		t.Errorf("no placeholder, owner references %+v", refs)
	}
}

func TestTheKubeletEndsThePodAtTheTimeoutRoundedUp(t *testing.T) {
	for timeout, want := range map[time.Duration]int64{10 * time.Minute: 600, 90*time.Second + time.Millisecond: 91, time.Nanosecond: 1} {
		p := examplePod()
		p.Timeout = timeout
		if got := *p.Build().Spec.ActiveDeadlineSeconds; got != want {
			t.Errorf("timeout %v: activeDeadlineSeconds %d, want %d", timeout, got, want)
		}
	}
}

func TestTheInitContainerInstallsTheNoopFromTheControllersImage(t *testing.T) {
	p := examplePod()
	pod := p.Build()
	if len(pod.Spec.InitContainers) != 1 {
		t.Fatalf("%d init containers", len(pod.Spec.InitContainers))
	}
	c := pod.Spec.InitContainers[0]
	if c.Image != p.Installer || !slices.Equal(c.Command, []string{installerBinary, InstallArg, noopPath}) {
		t.Errorf("init container runs %q in %s", c.Command, c.Image)
	}
	if pod.Spec.ImagePullSecrets != nil {
		t.Errorf("pull secrets %v without any configured", pod.Spec.ImagePullSecrets)
	}
	p.InstallerPullSecrets = []string{"regcred", "mirror"}
	if got := p.Build().Spec.ImagePullSecrets; !slices.Equal(got, []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "mirror"}}) {
		t.Errorf("pull secrets %v, want the installer's", got)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].ReadOnly || c.VolumeMounts[0].MountPath != mountPath {
		t.Errorf("init container mounts %+v, want the volume writable", c.VolumeMounts)
	}
	vols := pod.Spec.Volumes
	if len(vols) != 1 || vols[0].Name != volume || vols[0].EmptyDir == nil {
		t.Errorf("volumes %+v, want one emptyDir", vols)
	}
}

// The controller's image puts its binary where the init container runs it.
func TestTheInstallerBinaryIsWhereTheImageHasIt(t *testing.T) {
	b, err := os.ReadFile("../../Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^ENTRYPOINT \["` + regexp.QuoteMeta(installerBinary) + `"\]$`).Match(b) {
		t.Errorf("the Containerfile's entrypoint is not %s", installerBinary)
	}
}

// The controller's namespace may enforce the restricted Pod Security
// Standard; a Pod it refuses would leave the phase nothing but its timeout.
func TestThePodMeetsTheRestrictedPodSecurityStandard(t *testing.T) {
	pod := examplePod().Build()
	eval, err := psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range eval.EvaluatePod(psa.LevelVersion{Level: psa.LevelRestricted, Version: psa.LatestVersion()}, &pod.ObjectMeta, &pod.Spec) {
		if !r.Allowed {
			t.Errorf("restricted: %s: %s", r.ForbiddenReason, r.ForbiddenDetail)
		}
	}
}

func TestOnlyLinuxNodesRunTheNoop(t *testing.T) {
	node := func(labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	}
	if !LinuxNode(node(map[string]string{corev1.LabelOSStable: "linux"})) || !LinuxNode(node(nil)) {
		t.Error("a Linux node, or one that does not say, is not taken for Linux")
	}
	if LinuxNode(node(map[string]string{corev1.LabelOSStable: "windows"})) {
		t.Error("a Windows node is taken for Linux")
	}
}

// With usePullSecrets the images whose Pods need their imagePullSecrets
// are pulled by a Pod in each such namespace, with the union of those
// Pods' secrets, owned by the old claim (no owner across namespaces); the
// first Pod alone carries the skipped images.
func TestAPodPerNamespaceForTheImagesThatNeedTheirPodsSecrets(t *testing.T) {
	p := examplePod()
	p.ClaimUID = "claim-uid"
	p.Images = append(p.Images,
		Image{Ref: "registry.example.com/a/one:1", Fate: Pull, Namespace: "team-a", Secrets: []string{"a-reg"}},
		Image{Ref: "registry.example.com/b/two:1", Fate: Pull, Namespace: "team-b", Secrets: []string{"b-reg"}},
		Image{Ref: "registry.example.com/a/three:1", Fate: Pull, Namespace: "team-a", Secrets: []string{"a-reg", "a-mirror"}},
	)
	pods := p.Pods()
	var where []string
	for _, pod := range pods {
		where = append(where, fmt.Sprintf("%s:%d", pod.Namespace, len(pod.Spec.Containers)))
	}
	if !slices.Equal(where, []string{p.Namespace + ":3", "team-a:2", "team-b:1"}) {
		t.Fatalf("Pods %q, want the controller's first, then team-a's two images and team-b's one", where)
	}
	a := pods[1]
	if a.Name != PodName(p.Claim) || a.Spec.NodeName != p.Node || a.Labels[v1alpha1.LabelPrePullFor] != p.Claim {
		t.Errorf("team-a's Pod %s, node %s, labels %v", a.Name, a.Spec.NodeName, a.Labels)
	}
	if want := []corev1.LocalObjectReference{{Name: "a-reg"}, {Name: "a-mirror"}}; !reflect.DeepEqual(a.Spec.ImagePullSecrets, want) {
		t.Errorf("team-a's pull secrets %v, want %v: its images' Pods', each once, not the installer's", a.Spec.ImagePullSecrets, want)
	}
	if refs := a.OwnerReferences; len(refs) != 1 || refs[0].Kind != "NodeClaim" || refs[0].Name != p.Claim || refs[0].UID != "claim-uid" {
		t.Errorf("team-a's owners %+v, want the old claim", refs)
	}
	// every Pod tells the whole rotation: whichever exist, the skipped
	// images count once, and a namespace whose Pod is missing is named
	for _, pod := range pods {
		if !reflect.DeepEqual(pod.Annotations, pods[0].Annotations) {
			t.Errorf("%s's annotations %v differ from %v", pod.Namespace, pod.Annotations, pods[0].Annotations)
		}
	}
	if o := ReadAll(pods); o.Skipped != 4 || o.Failed != 0 || o.Unfinished != 6 {
		t.Errorf("all three: %+v, want 4 skipped, 6 unfinished", o)
	}
	o := ReadAll([]*corev1.Pod{pods[0], pods[2]}) // team-a's never created
	if o.Skipped != 4 || o.Failed != 2 || !slices.Equal(o.FailedImages, []string{"registry.example.com/a/one:1", "registry.example.com/a/three:1"}) {
		t.Errorf("team-a's Pod missing: %+v, want its two images failed and named", o)
	}
	if fs := FatesAll([]*corev1.Pod{pods[0], pods[2]}); len(fs) != 3+1+2+4 || fs[4].Fate != FateNoPod || fs[6].Fate != string(Excluded) {
		t.Errorf("fates %+v, want the Pods' 4 images, team-a's 2 without a Pod, the 4 skipped once", fs)
	}
	// nothing pulled without secrets: no Pod beside the placeholder
	p.Images = p.Images[len(p.Images)-3:]
	if p.Build() != nil {
		t.Error("a Pod in the controller's namespace with nothing to pull there")
	}
	if pods := p.Pods(); len(pods) != 2 || pods[0].Namespace != "team-a" {
		t.Errorf("Pods %v", pods)
	}
}

// A source Pod in the controller's own namespace may have its own pull
// secrets: the Pod there pulls with them beside the installer's. Every
// Pod names the attempt it was made for (its placeholder's UID).
func TestThePodBesideThePlaceholderPullsWithItsImagesSecretsToo(t *testing.T) {
	p := examplePod()
	p.InstallerPullSecrets = []string{"regcred"}
	p.Images = []Image{{Ref: "registry.example.com/ops/tool:1", Fate: Pull, Namespace: p.Namespace, Secrets: []string{"ops-reg", "regcred"}}}
	pod := p.Build()
	if pod == nil || pod.Namespace != p.Namespace {
		t.Fatalf("Pod %v, want one beside the placeholder", pod)
	}
	if want := []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "ops-reg"}}; !reflect.DeepEqual(pod.Spec.ImagePullSecrets, want) {
		t.Errorf("pull secrets %v, want %v", pod.Spec.ImagePullSecrets, want)
	}
	if pod.Annotations[AttemptAnnotation] != string(p.Owner.UID) {
		t.Errorf("attempt %q, want the placeholder's UID", pod.Annotations[AttemptAnnotation])
	}
}
