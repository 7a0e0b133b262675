package prepull

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// pod is a running Pod in namespace "app" with these container images
// (an "init:" prefix makes an init container).
func pod(name string, images ...string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	for i, img := range images {
		if rest, ok := strings.CutPrefix(img, "init:"); ok {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: fmt.Sprint("i", i), Image: rest})
			continue
		}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: fmt.Sprint("c", i), Image: img})
	}
	return p
}

func withSecrets(p corev1.Pod, names ...string) corev1.Pod {
	for _, n := range names {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: n})
	}
	return p
}

var old = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "old", Labels: map[string]string{corev1.LabelHostname: "old"}}}

// fates renders the selection as "ref=fate" in order.
func fates(images []Image) string {
	var out []string
	for _, img := range images {
		out = append(out, img.Ref+"="+string(img.Fate))
	}
	return strings.Join(out, " ")
}

func TestSelectTakesTheImagesOfThePodsTheDrainMoves(t *testing.T) {
	ds := pod("ds", "fluent-bit:3")
	ds.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "logs", Controller: ptr.To(true)}}
	mirror := pod("static", "etcd:3")
	mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	done := pod("job", "batch:1")
	done.Status.Phase = corev1.PodSucceeded
	pinned := pod("pinned", "local:1")
	pinned.Spec.NodeSelector = map[string]string{corev1.LabelHostname: "old"}
	web := pod("web", "init:migrate:2", "nginx", "sidecar:1")
	web.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
	api := pod("api", "docker.io/library/nginx:latest", "ghcr.io/acme/api@sha256:"+strings.Repeat("a", 64))

	got := fates(Select([]corev1.Pod{ds, mirror, done, pinned, web, api}, old, nil, Options{MaxImages: 20}))
	want := "docker.io/library/migrate:2=pull docker.io/library/nginx:latest=pull docker.io/library/sidecar:1=pull ghcr.io/acme/api@sha256:" + strings.Repeat("a", 64) + "=pull"
	if got != want {
		t.Fatalf("Select:\n got %s\nwant %s", got, want)
	}
}

func TestSelectSkipsWhatTheSurgeNodeHasAndWhatIsExcluded(t *testing.T) {
	surgeNode := &corev1.Node{Status: corev1.NodeStatus{Images: []corev1.ContainerImage{
		{Names: []string{"docker.io/library/nginx@sha256:" + strings.Repeat("b", 64), "docker.io/library/nginx:1.27"}},
		{Names: []string{"envoy:1.30"}}, // a runtime that records the short form
	}}}
	// envoy is both present and excluded: present comes first
	pods := []corev1.Pod{pod("a", "nginx:1.27", "registry.internal/team/app:7", "busybox:1.36", "redis:7", "envoy:1.30")}
	got := Select(pods, old, surgeNode, Options{MaxImages: 1, Exclude: []string{"registry.internal/*/*", "busybox:*", "envoy:*"}})
	want := "docker.io/library/nginx:1.27=present registry.internal/team/app:7=excluded docker.io/library/busybox:1.36=excluded docker.io/library/redis:7=pull docker.io/library/envoy:1.30=present"
	if fates(got) != want {
		t.Fatalf("Select:\n got %s\nwant %s", fates(got), want)
	}
	if Count(got, Excluded) != 2 || Count(got, Pull) != 1 || Count(got, Present) != 2 {
		t.Fatalf("Count: excluded %d pull %d present %d", Count(got, Excluded), Count(got, Pull), Count(got, Present))
	}
}

func TestSelectStopsAtMaxImagesInTheOrderOfThePods(t *testing.T) {
	pods := []corev1.Pod{pod("a", "one:1", "two:1"), pod("b", "two:1", "three:1", "four:1")}
	got := fates(Select(pods, old, nil, Options{MaxImages: 2}))
	want := "docker.io/library/one:1=pull docker.io/library/two:1=pull docker.io/library/three:1=overLimit docker.io/library/four:1=overLimit"
	if got != want {
		t.Fatalf("Select:\n got %s\nwant %s", got, want)
	}
}

func TestSelectLeavesPullSecretImagesToTheOptIn(t *testing.T) {
	private := withSecrets(pod("private", "registry.acme.io/app:1", "shared:1"), "acme-pull")
	public := pod("public", "shared:1")
	pods := []corev1.Pod{private, public}

	// maxImages 1: an image left to its secrets does not use up the limit
	without := Select(pods, old, nil, Options{MaxImages: 1})
	if want := "registry.acme.io/app:1=needsPullSecrets docker.io/library/shared:1=pull"; fates(without) != want {
		t.Fatalf("without usePullSecrets:\n got %s\nwant %s", fates(without), want)
	}
	if s := without[1]; s.Pod != "app/public" || len(s.Secrets) != 0 {
		t.Fatalf("an image a Pod without secrets also runs is credited to it, got %+v", s)
	}

	with := Select(pods, old, nil, Options{MaxImages: 20, UsePullSecrets: true})
	if want := "registry.acme.io/app:1=pull docker.io/library/shared:1=pull"; fates(with) != want {
		t.Fatalf("with usePullSecrets:\n got %s\nwant %s", fates(with), want)
	}
	if s := with[0]; s.Namespace != "app" || strings.Join(s.Secrets, ",") != "acme-pull" || s.As != "registry.acme.io/app:1" {
		t.Fatalf("a private image is pulled in its Pod's namespace with its secrets, got %+v", s)
	}
}

func TestSelectNamesAnImageItCannotParse(t *testing.T) {
	got := Select([]corev1.Pod{pod("a", "Not A Reference", "ok:1")}, old, nil, Options{MaxImages: 1})
	if want := "Not A Reference=invalidReference docker.io/library/ok:1=pull"; fates(got) != want {
		t.Fatalf("Select:\n got %s\nwant %s", fates(got), want)
	}
}

// A glob matches any spelling the moving Pods use, whichever Pod comes
// first.
func TestSelectExcludesWhateverPodComesFirst(t *testing.T) {
	long, short := pod("long", "docker.io/library/nginx:1.25"), pod("short", "nginx:1.25")
	for _, pods := range [][]corev1.Pod{{long, short}, {short, long}} {
		got := Select(pods, old, nil, Options{MaxImages: 20, Exclude: []string{"nginx:*"}})
		if want := "docker.io/library/nginx:1.25=excluded"; fates(got) != want {
			t.Errorf("pods %s, %s: got %s, want %s", pods[0].Name, pods[1].Name, fates(got), want)
		}
	}
}

// An image volume is an image the Pod needs; an image no Pod would pull
// (imagePullPolicy Never) is named, not pulled, unless another Pod pulls it.
func TestSelectImageVolumesAndPullPolicyNever(t *testing.T) {
	side := pod("side", "loaded:1", "both:1")
	side.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	side.Spec.Containers[1].ImagePullPolicy = corev1.PullNever
	side.Spec.Volumes = []corev1.Volume{
		{Name: "model", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "models/llm:7"}}},
		{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	other := pod("other", "both:1")
	got := fates(Select([]corev1.Pod{side, other}, old, nil, Options{MaxImages: 20}))
	want := "docker.io/library/loaded:1=pullPolicyNever docker.io/library/both:1=pull docker.io/models/llm:7=pull"
	if got != want {
		t.Fatalf("Select:\n got %s\nwant %s", got, want)
	}
}
