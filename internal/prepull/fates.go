package prepull

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
)

// What became of an image the Pod pulls, as its container status says
// (rotationctl explain lists them; Read counts them).
const (
	FatePulled   = "pulled"   // the container runs, ran, or erred after its pull
	FatePulling  = "pulling"  // not reached yet, or its pull under way
	FateFailed   = "failed"   // a pull error the kubelet does not get past
	FateRetrying = "retrying" // a pull error the kubelet retries, backing off
	// FateNoPod: its namespace's Pod was never created (refused, or the
	// create cut short): counted failed.
	FateNoPod = "noPod"
	// FateToPull: the selection's image, no Pod created yet.
	FateToPull = "toPull"
)

// ImageFate is one image of a rotation's pre-pull phase and what became of
// it: a Fate* for the images the Pod pulls, the selection's Fate for those
// it skips.
type ImageFate struct {
	Image string `json:"image"`
	Fate  string `json:"fate"`
	// Reason is the kubelet's waiting reason for a failed or retrying
	// pull, with its message.
	Reason string `json:"reason,omitempty"`
	// Installer: the init container that installs the no-op; when it
	// cannot be pulled, no image container starts.
	Installer bool `json:"installer,omitempty"`
}

// Fates lists the Pod's installer when its pull failed, each image
// container's image with its fate, then the images the rotation's Pods
// were built without and why (the selection's fates, kept on each Pod).
func Fates(pod *corev1.Pod) []ImageFate {
	return append(containerFates(pod), skippedFates(pod)...)
}

// FatesAll lists the rotation's Pods' images: each Pod's containers, then
// the images of a namespace whose Pod was never created, then the skipped
// ones, once.
func FatesAll(pods []*corev1.Pod) []ImageFate {
	var out []ImageFate
	for _, pod := range pods {
		out = append(out, containerFates(pod)...)
	}
	for _, img := range Unplaced(pods) {
		out = append(out, ImageFate{Image: img, Fate: FateNoPod})
	}
	if len(pods) > 0 {
		out = append(out, skippedFates(pods[0])...)
	}
	return out
}

func containerFates(pod *corev1.Pod) []ImageFate {
	var out []ImageFate
	for _, s := range pod.Status.InitContainerStatuses {
		if f := statusFate(s.Image, s); f.Fate == FateFailed || f.Fate == FateRetrying {
			f.Installer = true
			out = append(out, f)
		}
	}
	status := map[string]corev1.ContainerStatus{}
	for _, s := range pod.Status.ContainerStatuses {
		status[s.Name] = s
	}
	for _, c := range pod.Spec.Containers {
		s, ok := status[c.Name]
		if !ok {
			out = append(out, ImageFate{Image: c.Image, Fate: FatePulling})
			continue
		}
		out = append(out, statusFate(c.Image, s))
	}
	return out
}

// statusFate reads one container's status.
func statusFate(image string, s corev1.ContainerStatus) ImageFate {
	f := ImageFate{Image: image, Fate: FatePulling}
	w := s.State.Waiting
	switch failed, lasting := pullFailure(s); {
	case s.State.Running != nil || s.State.Terminated != nil || s.ImageID != "" || w != nil && afterPull[w.Reason]:
		f.Fate = FatePulled
	case failed && lasting:
		f.Fate = FateFailed
	case failed:
		f.Fate = FateRetrying
	}
	if f.Fate == FateFailed || f.Fate == FateRetrying {
		f.Reason = w.Reason
		if w.Message != "" {
			f.Reason += ": " + w.Message
		}
	}
	return f
}

// Planned lists a selection not yet made into a Pod: the images to pull,
// then the others with their fates.
func Planned(images []Image) []ImageFate {
	var out []ImageFate
	for _, img := range images {
		if img.Fate == Pull {
			out = append(out, ImageFate{Image: img.Ref, Fate: FateToPull})
		}
	}
	for _, img := range images {
		if img.Fate != Pull {
			out = append(out, ImageFate{Image: img.Ref, Fate: string(img.Fate)})
		}
	}
	return out
}

// skippedImagesAnnotation keeps on the Pod the images it was built
// without, with their fates, for rotationctl explain; at most
// maxSkippedListed of them, so a node of many images keeps the Pod small
// (the count in skippedAnnotation is always whole).
const (
	skippedImagesAnnotation = "noderotation.io/prepull-skipped-images"
	maxSkippedListed        = 64
)

// skippedList is the annotation's value for a selection, empty when it
// skips nothing.
func skippedList(images []Image) string {
	var out []ImageFate
	for _, img := range images {
		if img.Fate != Pull && len(out) < maxSkippedListed {
			out = append(out, ImageFate{Image: img.Ref, Fate: string(img.Fate)})
		}
	}
	if len(out) == 0 {
		return ""
	}
	b, _ := json.Marshal(out) // strings only: cannot fail
	return string(b)
}

// skippedFates reads the annotation back; a value no build of this
// controller wrote (edited by hand) lists nothing rather than guessing.
func skippedFates(pod *corev1.Pod) []ImageFate {
	var out []ImageFate
	if v := pod.Annotations[skippedImagesAnnotation]; v != "" && json.Unmarshal([]byte(v), &out) != nil {
		return nil
	}
	return out
}
