package prepull

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// namePrefix names pre-pull Pods so an operator can spot them beside the
// placeholders (nrc-surge-<claim>).
const namePrefix = "nrc-prepull-"

// PodName is the pre-pull Pod's name for a rotating claim.
func PodName(claim string) string { return namePrefix + claim }

const (
	// component is the pre-pull Pods' app.kubernetes.io/component.
	component = "prepull"
	// installerBinary is the controller's binary in its own image
	// (Containerfile, build/image).
	installerBinary = "/node-rotation-controller"
	// mountPath holds the no-op in every container: a path no image is
	// likely to use, as the mount hides what the image has there.
	mountPath = "/.nrc-prepull"
	noopPath  = mountPath + "/noop"
	volume    = "noop"
	// skippedAnnotation counts the selection's images the Pod does not
	// pull, for the phase's record.
	skippedAnnotation = "noderotation.io/prepull-skipped"
	// planAnnotation is the rotation's plan on each of its Pods: the
	// images each namespace's Pod pulls (JSON), so a Pod that could not
	// be created is still accounted for.
	planAnnotation = "noderotation.io/prepull-plan"
	// AttemptAnnotation names the attempt a Pod was made for, by its
	// placeholder's UID: a Pod outside the controller's namespace, which
	// cannot be the placeholder's dependent, is told from an earlier
	// attempt's by it.
	AttemptAnnotation = "noderotation.io/prepull-attempt"
)

// Pod describes one rotation's pre-pull Pod.
type Pod struct {
	// Namespace is the controller's; PriorityClass and Tolerations the
	// placeholder's, so the Pod is as welcome on the surge node as the
	// reservation it stands beside.
	Namespace, PriorityClass string
	Tolerations              []corev1.Toleration
	// Installer is the controller's own image: its binary is the no-op.
	// InstallerPullSecrets are the Secrets it is pulled with in the
	// controller's namespace; the images pulled there need none (the
	// images whose Pods use imagePullSecrets are pulled, with
	// usePullSecrets, by a Pod in their Pods' namespace, which pulls the
	// installer with those Pods' secrets).
	Installer            string
	InstallerPullSecrets []string
	// Claim and Pool name the rotation; Node is its surge node. ClaimUID
	// is the old claim's: the owner of a Pod outside the controller's
	// namespace.
	Claim, Pool, Node string
	ClaimUID          types.UID
	// Owner is the rotation's placeholder. The Pod is its dependent, so
	// the garbage collector removes it on every path that deletes the
	// placeholder, whether or not a pass deletes the Pod itself.
	Owner *corev1.Pod
	// Timeout is prePull.timeout: the kubelet ends the Pod then
	// (activeDeadlineSeconds), with or without the controller.
	Timeout time.Duration
	// Images are the selection; only those with Fate Pull are pulled.
	Images []Image
}

// Build returns the pre-pull Pod in the controller's namespace, or nil
// when no image is to be pulled there. It is bound to the surge node
// (spec.nodeName: no scheduler, and no pending Pod for Karpenter to
// provision for), runs once (restartPolicy Never), requests nothing, and
// has one container per image in the selection's order, each running the
// no-op its init container installed.
func (p Pod) Build() *corev1.Pod {
	pods := p.Pods()
	if len(pods) == 0 || pods[0].Namespace != p.Namespace {
		return nil
	}
	return pods[0]
}

// Pods returns the rotation's pre-pull Pods: the one in the controller's
// namespace for the images pulled without secrets, then, with
// usePullSecrets, one in each namespace whose Pods' images need their
// imagePullSecrets, with those secrets (a Secret is only usable in its
// own namespace), in the selection's order. Every Pod carries what
// belongs to the rotation, not to it: the plan (each Pod's namespace and
// images) and the images none of them pulls, so whichever Pods exist tell
// the whole phase.
func (p Pod) Pods() []*corev1.Pod {
	groups := map[string][]Image{}
	order := []string{p.Namespace}
	for _, img := range p.Images {
		if img.Fate != Pull {
			continue
		}
		ns := Home(img, p.Namespace)
		if _, ok := groups[ns]; !ok && ns != p.Namespace {
			order = append(order, ns)
		}
		groups[ns] = append(groups[ns], img)
	}
	plan := map[string][]string{}
	for ns, images := range groups {
		for _, img := range images {
			plan[ns] = append(plan[ns], img.Ref)
		}
	}
	var out []*corev1.Pod
	for _, ns := range order {
		if len(groups[ns]) == 0 {
			continue
		}
		pod := p.build(ns, groups[ns])
		pod.Annotations = p.annotations(plan)
		out = append(out, pod)
	}
	return out
}

// Home is the namespace of the Pod that pulls img: its Pod's when it
// needs that Pod's imagePullSecrets, else the controller's (ns).
func Home(img Image, ns string) string {
	if img.Fate == Pull && len(img.Secrets) > 0 && img.Namespace != "" {
		return img.Namespace
	}
	return ns
}

// build is the Pod in ns that pulls images. In the controller's namespace
// it is the placeholder's dependent and pulls with the installer's
// secrets and those of its images' Pods (a source Pod of that namespace
// may have its own); elsewhere an owner in another namespace is not
// allowed, so it is the old NodeClaim's (cluster-scoped) and the rotation
// deletes it itself, and it pulls with its images' Pods' secrets.
func (p Pod) build(ns string, images []Image) *corev1.Pod {
	var containers []corev1.Container
	for _, img := range images {
		containers = append(containers, corev1.Container{
			Name:            fmt.Sprintf("image-%d", len(containers)+1),
			Image:           img.Ref,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{noopPath, NoopArg},
			VolumeMounts:    []corev1.VolumeMount{{Name: volume, MountPath: mountPath, ReadOnly: true}},
			SecurityContext: restricted(),
		})
	}
	owners, pullSecrets := owner(p.Owner), unionSecrets(append([]Image{{Secrets: p.InstallerPullSecrets}}, images...))
	if ns != p.Namespace {
		owners, pullSecrets = p.claimOwner(), unionSecrets(images)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      PodName(p.Claim),
			Namespace: ns,
			Labels: map[string]string{
				v1alpha1.LabelPrePullFor:      p.Claim,
				v1alpha1.LabelNodePool:        p.Pool,
				v1alpha1.LabelManagedBy:       v1alpha1.ManagedBy,
				"app.kubernetes.io/component": component,
			},
			OwnerReferences: owners,
		},
		Spec: corev1.PodSpec{
			NodeName:                      p.Node,
			PriorityClassName:             p.PriorityClass,
			Tolerations:                   p.Tolerations,
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         ptr.To(deadline(p.Timeout)),
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65532)), RunAsGroup: ptr.To(int64(65532)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			ImagePullSecrets: secrets(pullSecrets),
			Volumes:          []corev1.Volume{{Name: volume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			InitContainers: []corev1.Container{{
				Name:            "install-noop",
				Image:           p.Installer,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{installerBinary, InstallArg, noopPath},
				VolumeMounts:    []corev1.VolumeMount{{Name: volume, MountPath: mountPath}},
				SecurityContext: restricted(),
			}},
			Containers: containers,
		},
	}
}

// unionSecrets are the imagePullSecrets of images' Pods, each once, in
// order: the kubelet tries each for a registry that asks.
func unionSecrets(images []Image) []string {
	var out []string
	for _, img := range images {
		for _, s := range img.Secrets {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// claimOwner makes a Pod outside the controller's namespace a dependent
// of the old NodeClaim: the garbage collector removes it with the claim,
// should every delete of the rotation's have missed it.
func (p Pod) claimOwner() []metav1.OwnerReference {
	if p.ClaimUID == "" {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: p.Claim, UID: p.ClaimUID}}
}

// annotations are the rotation's: the plan, the count and list of the
// images no Pod pulls, and the attempt (its placeholder's UID).
func (p Pod) annotations(plan map[string][]string) map[string]string {
	b, _ := json.Marshal(plan) // strings only: cannot fail
	a := map[string]string{skippedAnnotation: strconv.Itoa(Skipped(p.Images)), planAnnotation: string(b)}
	if p.Owner != nil && p.Owner.UID != "" {
		a[AttemptAnnotation] = string(p.Owner.UID)
	}
	if list := skippedList(p.Images); list != "" {
		a[skippedImagesAnnotation] = list
	}
	return a
}

func secrets(names []string) []corev1.LocalObjectReference {
	var out []corev1.LocalObjectReference
	for _, n := range names {
		out = append(out, corev1.LocalObjectReference{Name: n})
	}
	return out
}

// owner makes the Pod a dependent of the placeholder, when there is one.
func owner(placeholder *corev1.Pod) []metav1.OwnerReference {
	if placeholder == nil || placeholder.UID == "" {
		return nil
	}
	return []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: placeholder.Name, UID: placeholder.UID}}
}

// deadline is the timeout in whole seconds, rounded up: the kubelet never
// ends the Pod before the controller would.
func deadline(timeout time.Duration) int64 {
	return max(1, int64(math.Ceil(timeout.Seconds())))
}

// restricted is every container's security context: the Pod meets the
// restricted Pod Security Standard whatever the image's USER says.
func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// LinuxNode reports whether node runs Linux containers, the only ones the
// no-op can run in; a node that does not say is taken to.
func LinuxNode(node *corev1.Node) bool {
	os, ok := node.Labels[corev1.LabelOSStable]
	return !ok || os == "linux"
}
