package prepull

import (
	"fmt"
	"math"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
)

// Pod describes one rotation's pre-pull Pod.
type Pod struct {
	// Namespace is the controller's; PriorityClass and Tolerations the
	// placeholder's, so the Pod is as welcome on the surge node as the
	// reservation it stands beside.
	Namespace, PriorityClass string
	Tolerations              []corev1.Toleration
	// Installer is the controller's own image: its binary is the no-op.
	// InstallerPullSecrets are the Secrets it is pulled with; the images
	// of the selection need none (images whose Pods use imagePullSecrets
	// are not pulled without usePullSecrets).
	Installer            string
	InstallerPullSecrets []string
	// Claim and Pool name the rotation; Node is its surge node.
	Claim, Pool, Node string
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

// Build returns the pre-pull Pod, or nil when no image is to be pulled.
// It is bound to the surge node (spec.nodeName: no scheduler, and no
// pending Pod for Karpenter to provision for), runs once (restartPolicy
// Never), requests nothing, and has one container per image in the
// selection's order, each running the no-op its init container installed.
func (p Pod) Build() *corev1.Pod {
	var containers []corev1.Container
	for _, img := range p.Images {
		if img.Fate != Pull {
			continue
		}
		containers = append(containers, corev1.Container{
			Name:            fmt.Sprintf("image-%d", len(containers)+1),
			Image:           img.Ref,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{noopPath, NoopArg},
			VolumeMounts:    []corev1.VolumeMount{{Name: volume, MountPath: mountPath, ReadOnly: true}},
			SecurityContext: restricted(),
		})
	}
	if len(containers) == 0 {
		return nil
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      PodName(p.Claim),
			Namespace: p.Namespace,
			Labels: map[string]string{
				v1alpha1.LabelPrePullFor:      p.Claim,
				v1alpha1.LabelNodePool:        p.Pool,
				v1alpha1.LabelManagedBy:       v1alpha1.ManagedBy,
				"app.kubernetes.io/component": component,
			},
			Annotations:     p.annotations(),
			OwnerReferences: owner(p.Owner),
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
			ImagePullSecrets: secrets(p.InstallerPullSecrets),
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

// annotations count the images the Pod skips, and list them when any.
func (p Pod) annotations() map[string]string {
	a := map[string]string{skippedAnnotation: strconv.Itoa(Skipped(p.Images))}
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
