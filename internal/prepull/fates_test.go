package prepull

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func fateLines(fs []ImageFate) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s %s", f.Image, f.Fate)
		if f.Reason != "" {
			fmt.Fprintf(&b, " (%s)", f.Reason)
		}
		if f.Installer {
			b.WriteString(" installer")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Explain lists every image of the selection: the Pod's with what its
// container status says, then those the Pod was built without and why.
func TestFatesListEachImageOfThePodThenTheSkippedOnes(t *testing.T) {
	pod := examplePod().Build()
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "image-1", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		{Name: "image-2", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}},
	}
	want := "docker.io/library/nginx:1.25 pulled\n" +
		"ghcr.io/org/sidecar@sha256:" + sixtyFour + " retrying (ImagePullBackOff: Back-off pulling image)\n" +
		"docker.io/library/redis:7 pulling\n" +
		"registry.internal/team/app:2 excluded\n" +
		"docker.io/library/busybox:latest present\n" +
		"quay.io/org/private:1 needsPullSecrets\n" +
		"docker.io/library/postgres:16 overLimit\n"
	if got := fateLines(Fates(pod)); got != want {
		t.Errorf("fates:\n%s\nwant:\n%s", got, want)
	}
	pod.Status.ContainerStatuses[1].State.Waiting.Reason = "InvalidImageName"
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "install-noop", Image: "ghcr.io/noderotation/node-rotation-controller:0.4.0",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}}}
	got := fateLines(Fates(pod))
	for _, line := range []string{
		"ghcr.io/noderotation/node-rotation-controller:0.4.0 retrying (ErrImagePull) installer\n",
		"ghcr.io/org/sidecar@sha256:" + sixtyFour + " failed (InvalidImageName: Back-off pulling image)\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("fates:\n%s\nlack %q", got, line)
		}
	}
}

// The list kept on the Pod is bounded; the count beside it stays whole,
// and a list edited into garbage lists nothing rather than failing.
func TestTheSkippedListIsBoundedAndGarbageListsNothing(t *testing.T) {
	p := examplePod()
	for i := range 2 * maxSkippedListed {
		p.Images = append(p.Images, Image{Ref: fmt.Sprintf("registry.internal/many:%d", i), Fate: Present})
	}
	pod := p.Build()
	if n := len(skippedFates(pod)); n != maxSkippedListed {
		t.Errorf("%d skipped images listed, want %d", n, maxSkippedListed)
	}
	if o := Read(pod); o.Skipped != 4+2*maxSkippedListed {
		t.Errorf("skipped count %d", o.Skipped)
	}
	pod.Annotations[skippedImagesAnnotation] = "{not json"
	if fs := Fates(pod); len(fs) != 3 {
		t.Errorf("fates %v: want only the Pod's three images", fs)
	}
	onlyPulled := examplePod()
	onlyPulled.Images = onlyPulled.Images[:1]
	if _, ok := onlyPulled.Build().Annotations[skippedImagesAnnotation]; ok {
		t.Error("a Pod that skips nothing carries a skipped list")
	}
}

func TestPlannedListsTheImagesToPullFirst(t *testing.T) {
	got := fateLines(Planned(examplePod().Images))
	if !strings.HasPrefix(got, "docker.io/library/nginx:1.25 toPull\nghcr.io/org/sidecar@sha256:"+sixtyFour+" toPull\ndocker.io/library/redis:7 toPull\nregistry.internal/team/app:2 excluded\n") {
		t.Errorf("planned:\n%s", got)
	}
}
