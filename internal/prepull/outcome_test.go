package prepull

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReadCountsWhatEachImageCameTo(t *testing.T) {
	p := examplePod()
	pod := p.Build()
	waiting := func(name, reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{
		{Name: "image-1", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
		waiting("image-2", "ImagePullBackOff"),
		waiting("image-3", "ContainerCreating"),
	}
	o := Read(pod)
	if o.Pulled != 1 || o.Failed != 1 || o.Unfinished != 1 || o.Skipped != 4 {
		t.Errorf("outcome %+v, want 1 pulled, 1 failed, 1 unfinished, 4 skipped (the example's four images not pulled)", o)
	}
	if !slices.Equal(o.FailedImages, []string{"ghcr.io/org/sidecar@sha256:" + sixtyFour}) {
		t.Errorf("failed images %q", o.FailedImages)
	}
	// a container that ran and exited with an error still had its image
	pod.Status.ContainerStatuses[1] = corev1.ContainerStatus{Name: "image-2", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 128, Reason: "StartError"}}}
	pod.Status.ContainerStatuses[2] = waiting("image-3", "ErrImagePull")
	if o := Read(pod); o.Pulled != 2 || o.Failed != 1 || o.Unfinished != 0 || o.FailedImages[0] != "docker.io/library/redis:7" {
		t.Errorf("outcome %+v", o)
	}
	// no status at all: nothing reached
	pod.Status.ContainerStatuses = nil
	if o := Read(pod); o.Unfinished != 3 || o.Pulled+o.Failed != 0 {
		t.Errorf("no statuses: %+v", o)
	}
}

func TestEndedIsSucceededFailedOrDeleted(t *testing.T) {
	for phase, want := range map[corev1.PodPhase]bool{corev1.PodPending: false, corev1.PodRunning: false, corev1.PodSucceeded: true, corev1.PodFailed: true} {
		if got := Ended(&corev1.Pod{Status: corev1.PodStatus{Phase: phase}}); got != want {
			t.Errorf("%s: ended %v", phase, got)
		}
	}
	if !Ended(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &metav1.Time{}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}) {
		t.Error("a deleted Pod is not over")
	}
}

func TestNeededAndSkippedCountTheFates(t *testing.T) {
	images := examplePod().Images
	if !Needed(images) || Skipped(images) != 4 {
		t.Errorf("needed %v skipped %d", Needed(images), Skipped(images))
	}
	if Needed(images[1:2]) || Needed(nil) {
		t.Error("an excluded image alone, or none, needs a Pod")
	}
}

// The phase need not wait for the no-ops to exit, nor for an image the
// node cannot pull (its container waits in back-off, and a restartPolicy
// Never Pod never ends).
func TestThePodIsOverOnceEveryImageIsPulledOrFailed(t *testing.T) {
	pod := examplePod().Build()
	running := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	}
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{running("image-1"), running("image-2")}
	if Ended(pod) {
		t.Error("over with image-3 not reached")
	}
	pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: "image-3",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}})
	if Ended(pod) {
		t.Error("over while the kubelet retries image-3's pull: a registry blip may clear")
	}
	for _, reason := range []string{"InvalidImageName", "ErrImageNeverPull", "SignatureValidationFailed"} {
		pod.Status.ContainerStatuses[2].State.Waiting.Reason = reason
		if !Ended(pod) {
			t.Errorf("not over with image-3 failed for good (%s)", reason)
		}
	}
	for _, reason := range []string{"ErrImagePull", "ImagePullBackOff", "RegistryUnavailable", "ImageInspectError"} {
		pod.Status.ContainerStatuses[2].State.Waiting.Reason = reason
		if o := Read(pod); o.Failed != 1 || o.Retrying != 1 || Ended(pod) {
			t.Errorf("%s: outcome %+v, ended %v: want a failed image the kubelet retries", reason, o, Ended(pod))
		}
	}
}

func TestAnInstallerThatCannotBePulledIsNamed(t *testing.T) {
	pod := examplePod().Build()
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "install-noop", Image: "ghcr.io/noderotation/node-rotation-controller:0.4.0",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}}}
	o := Read(pod)
	if !slices.Equal(o.FailedImages, []string{"ghcr.io/noderotation/node-rotation-controller:0.4.0"}) || o.Unfinished != 3 {
		t.Errorf("outcome %+v: want the installer named, every image unfinished", o)
	}
}

// A container waiting on an error the kubelet meets after the pull (the
// config, the create, the start) has its image on the node, as has one
// whose image the runtime resolved (imageID set).
func TestAContainerPastItsPullCountsAsPulled(t *testing.T) {
	pod := examplePod().Build()
	waiting := func(name, reason string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
	}
	resolved := waiting("image-3", "ContainerCreating")
	resolved.ImageID = "docker.io/library/redis@sha256:" + sixtyFour
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{waiting("image-1", "CreateContainerError"), waiting("image-2", "CreateContainerConfigError"), resolved}
	if o := Read(pod); o.Pulled != 3 || o.Unfinished != 0 {
		t.Errorf("outcome %+v: want every image pulled", o)
	}
	pod.Status.ContainerStatuses[0] = waiting("image-1", "ContainerCreating")
	if o := Read(pod); o.Pulled != 2 || o.Unfinished != 1 {
		t.Errorf("outcome %+v: ContainerCreating is not past the pull", o)
	}
}
