package prepull

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Outcome is what a pre-pull Pod's image containers came to.
type Outcome struct {
	// Pulled: containers the kubelet created (their image is on the
	// node); Failed: containers whose image could not be pulled, their
	// images in FailedImages; Unfinished: the rest, not reached.
	Pulled, Failed, Unfinished int
	FailedImages               []string
	// Skipped is the selection's images the Pod was built without.
	Skipped int
}

// pullFailures are the kubelet's waiting reasons for an image it could not
// pull (pkg/kubelet/images): each ends that image's part of the phase.
var pullFailures = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true,
	"RegistryUnavailable": true, "SignatureValidationFailed": true, "ErrImageInspect": true,
}

// Read reads the Pod's container statuses: a container that runs, ran or
// met an error after its image was there counts as pulled. An init
// container (the installer) that could not pull its image is named among
// FailedImages: then no image container ever starts.
func Read(pod *corev1.Pod) Outcome {
	var o Outcome
	for _, s := range pod.Status.InitContainerStatuses {
		if s.State.Waiting != nil && pullFailures[s.State.Waiting.Reason] {
			o.FailedImages = append(o.FailedImages, s.Image)
		}
	}
	status := map[string]corev1.ContainerStatus{}
	for _, s := range pod.Status.ContainerStatuses {
		status[s.Name] = s
	}
	for _, c := range pod.Spec.Containers {
		s, ok := status[c.Name]
		switch {
		case ok && (s.State.Running != nil || s.State.Terminated != nil || s.ImageID != ""):
			o.Pulled++
		case ok && s.State.Waiting != nil && pullFailures[s.State.Waiting.Reason]:
			o.Failed++
			o.FailedImages = append(o.FailedImages, c.Image)
		default:
			o.Unfinished++
		}
	}
	o.Skipped, _ = strconv.Atoi(pod.Annotations[skippedAnnotation])
	return o
}

// Skipped counts the selection's images that are not pulled.
func Skipped(images []Image) int {
	n := 0
	for _, img := range images {
		if img.Fate != Pull {
			n++
		}
	}
	return n
}

// Needed reports whether the selection has an image to pull.
func Needed(images []Image) bool { return len(images) > Skipped(images) }

// Ended reports whether the Pod is over: Succeeded, Failed or deleted, or
// every image container's image is pulled or failed to pull — a container
// waiting on a pull error never ends a restartPolicy Never Pod, and the
// drain need not wait for the no-ops to exit.
func Ended(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return true
	}
	return len(pod.Spec.Containers) > 0 && Read(pod).Unfinished == 0
}
