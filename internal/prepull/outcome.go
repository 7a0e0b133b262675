package prepull

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// Outcome is what a pre-pull Pod's image containers came to.
type Outcome struct {
	// Pulled: containers the kubelet created (their image is on the
	// node); Failed: containers whose image could not be pulled, their
	// images in FailedImages, Retrying of them on an error the kubelet
	// retries (it may yet pull it); Unfinished: the rest, not reached.
	Pulled, Failed, Retrying, Unfinished int
	FailedImages                         []string
	// Skipped is the selection's images the Pod was built without.
	Skipped int
}

// pullFailures are the kubelet's waiting reasons for an image it could not
// pull (k8s.io/kubernetes pkg/kubelet/images/types.go), true for those it
// cannot get past: a bad reference, a never-pull policy, a signature. The
// others — a registry error, a rate limit, a network blip — it retries,
// backing off, even in a restartPolicy Never Pod, so they may clear.
var pullFailures = map[string]bool{
	"InvalidImageName": true, "ErrImageNeverPull": true, "SignatureValidationFailed": true,
	"ErrImagePull": false, "ImagePullBackOff": false, "RegistryUnavailable": false, "ImageInspectError": false,
}

// afterPull are the kubelet's waiting reasons for a container whose image
// it has (pkg/kubelet/kuberuntime: the pull comes first, then the config,
// the create and the start): the image is on the node.
var afterPull = map[string]bool{
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
	"PreStartHookError": true, "PostStartHookError": true,
}

func pullFailure(s corev1.ContainerStatus) (failed, lasting bool) {
	if s.State.Waiting == nil {
		return false, false
	}
	lasting, failed = pullFailures[s.State.Waiting.Reason]
	return failed, lasting
}

// Read reads the Pod's container statuses: a container that runs, ran or
// met an error after its image was there counts as pulled. An init
// container (the installer) that could not pull its image is named among
// FailedImages: then no image container ever starts.
func Read(pod *corev1.Pod) Outcome {
	var o Outcome
	for _, f := range Fates(pod) {
		switch f.Fate {
		case FatePulled:
			o.Pulled++
		case FateFailed, FateRetrying:
			o.FailedImages = append(o.FailedImages, f.Image)
			if f.Installer {
				continue
			}
			o.Failed++
			if f.Fate == FateRetrying {
				o.Retrying++
			}
		case FatePulling:
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
// every image container's image is pulled or cannot be — a container
// waiting on a pull error never ends a restartPolicy Never Pod, and the
// drain need not wait for the no-ops to exit. An error the kubelet
// retries keeps it going: the image may yet come, until the timeout.
func Ended(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return true
	}
	o := Read(pod)
	return len(pod.Spec.Containers) > 0 && o.Unfinished == 0 && o.Retrying == 0
}

// ReadAll reads the rotation's Pods: their containers summed, the
// skipped images counted once, and the images of a namespace whose Pod
// the plan has but the API server never created (refused, or a create
// cut short) counted failed and named.
func ReadAll(pods []*corev1.Pod) Outcome {
	var o Outcome
	for i, pod := range pods {
		r := Read(pod)
		o.Pulled, o.Failed, o.Retrying, o.Unfinished = o.Pulled+r.Pulled, o.Failed+r.Failed, o.Retrying+r.Retrying, o.Unfinished+r.Unfinished
		if i == 0 {
			o.Skipped = r.Skipped // the rotation's, on every Pod
		}
		o.FailedImages = appendNew(o.FailedImages, r.FailedImages...)
	}
	unplaced := Unplaced(pods)
	o.Failed += len(unplaced)
	o.FailedImages = appendNew(o.FailedImages, unplaced...)
	return o
}

// Unplaced are the images the plan puts in a namespace no Pod of pods is
// in; none without a plan.
func Unplaced(pods []*corev1.Pod) []string {
	plan := planOf(pods)
	var out []string
	for _, ns := range slices.Sorted(maps.Keys(plan)) {
		if !slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.Namespace == ns }) {
			out = append(out, plan[ns]...)
		}
	}
	return out
}

// planOf is the plan the first of pods that carries a readable one says;
// a plan edited into garbage reads as none (nothing counted unplaced).
func planOf(pods []*corev1.Pod) map[string][]string {
	for _, pod := range pods {
		var plan map[string][]string
		if v := pod.Annotations[planAnnotation]; v != "" && json.Unmarshal([]byte(v), &plan) == nil {
			return plan
		}
	}
	return nil
}

func appendNew(to []string, images ...string) []string {
	for _, img := range images {
		if !slices.Contains(to, img) {
			to = append(to, img)
		}
	}
	return to
}

// AllEnded reports whether there are Pods and every one of them ended.
func AllEnded(pods []*corev1.Pod) bool {
	for _, pod := range pods {
		if !Ended(pod) {
			return false
		}
	}
	return len(pods) > 0
}
