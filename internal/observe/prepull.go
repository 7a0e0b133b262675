package observe

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/prepull"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// PrePull is the rotation's pre-pull phase as one pass saw it
// (docs/design.md#pre-pull).
type PrePull struct {
	// Pods are the attempt's pre-pull Pods, in every namespace the cache
	// holds them in (the controller's; with usePullSecrets, the source
	// Pods' too), by namespace; Stale those an earlier attempt of the
	// claim left (made for another placeholder, or on another node), which
	// the phase replaces and deletes and never counts. Both are read
	// whether or not the policy asks for the phase, so a rollback deletes
	// them whatever became of the policy.
	Pods, Stale []*corev1.Pod
	// Images is the selection, made only when the Pods may have to be
	// created: at surge-ready, and in draining while the placeholder is
	// kept and no Pod exists. Once one exists the rotation's Pods are
	// those its pass created: none is added later (an image a later
	// selection would add — maxImages freed by images pulled meanwhile —
	// is not this phase's), and a namespace whose Pod the API server
	// refused is accounted for by the plan each Pod carries.
	Images []prepull.Image
	// Missing are the namespaces the selection needs a Pod in, in its
	// order: every one while no Pod exists, else none.
	Missing []string
	// Begun: the draining state kept the placeholder for the phase, so
	// the phase ends with a record even when nothing is left to pull.
	Begun bool
	// Record is how the phase ends if it ends now, with the images the
	// Pods could not pull; nil when no phase is under way.
	Record *v1alpha1.PrePullRecord
	// Failed are the images the Pods could not pull (the installer's too).
	Failed []string
	// phase: the phase is observed (a governed pool whose policy asks for
	// it, its end not yet recorded); without it the Pods are read for
	// their deletion only and State is empty.
	phase bool
}

// The surge.prePull input's values (engine.SurgeObservation.PrePull).
const (
	prePullAbsent  = "absent"
	prePullRunning = "running"
	prePullEnded   = "ended"
)

// State is the engine's surge.prePull input: absent when a Pod is to be
// created, ended when every Pod ended (or the phase was begun with nothing
// left to pull), running while one runs, empty when there is no phase.
func (p PrePull) State() string {
	switch {
	case !p.phase:
		return ""
	case len(p.Missing) > 0:
		return prePullAbsent
	case prepull.AllEnded(p.Pods):
		return prePullEnded
	case len(p.Pods) > 0:
		return prePullRunning
	case p.Begun:
		return prePullEnded
	}
	return ""
}

// prePull observes the phase of the slot's rotation: only for a governed
// pool whose policy turns it on, only until the pool records its end. The
// rotation's Pods are read in any case.
func (o *Observer) prePull(ctx context.Context, obs *Observation) error {
	if obs.SubjectName == "" {
		return nil
	}
	if err := o.prePullPods(ctx, obs); err != nil {
		return err
	}
	if !obs.Governed() || !obs.Settings.PrePull.Enabled || obs.Subject == nil ||
		obs.Pool.Annotations[obs.Slot.Key(v1alpha1.AnnotationPrePull)] != "" {
		return nil
	}
	obs.PrePull.phase = true
	state := obs.Subject.Annotations[v1alpha1.AnnotationState]
	kept := obs.Placeholder != nil && obs.Placeholder.DeletionTimestamp == nil
	old := ""
	if obs.OldNode != nil {
		old = obs.OldNode.Name
	}
	var err error
	switch {
	case state == v1alpha1.StateDraining && kept:
		obs.PrePull.Begun = true
		if len(obs.PrePull.Pods) == 0 {
			err = o.selectImages(ctx, obs)
		}
	case state == v1alpha1.StatePending && len(obs.PrePull.Pods) == 0 && surge.Ready(obs.Placeholder, obs.SurgeHost, old, obs.Pool.Name):
		err = o.selectImages(ctx, obs)
	}
	if err != nil {
		return err
	}
	obs.PrePull.Missing = missing(obs.PrePull.Images, obs.PrePull.Pods, o.Namespace)
	if state == v1alpha1.StateDraining {
		obs.PrePull.Record, obs.PrePull.Failed = record(obs)
	}
	return nil
}

// prePullPods lists the rotation's pre-pull Pods from the cache, by their
// prepull-for label, each namespace once (the controller's first), apart
// from those an earlier attempt left.
func (o *Observer) prePullPods(ctx context.Context, obs *Observation) error {
	list := &corev1.PodList{}
	if err := o.Cache.List(ctx, list, client.MatchingLabels{v1alpha1.LabelPrePullFor: obs.SubjectName}); err != nil {
		return fmt.Errorf("listing the pre-pull Pods of %s: %w", obs.SubjectName, err)
	}
	obs.PrePull.Pods, obs.PrePull.Stale = nil, nil
	for i := range list.Items {
		pod := &list.Items[i]
		switch {
		case pod.Name != prepull.PodName(obs.SubjectName):
			// not one the controller names
		case stale(pod, obs, o.Namespace):
			obs.PrePull.Stale = append(obs.PrePull.Stale, pod)
		default:
			obs.PrePull.Pods = append(obs.PrePull.Pods, pod)
		}
	}
	elsewhere := func(p *corev1.Pod) int {
		if p.Namespace == o.Namespace {
			return 0
		}
		return 1
	}
	slices.SortFunc(obs.PrePull.Pods, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(elsewhere(a), elsewhere(b)), cmp.Compare(a.Namespace, b.Namespace))
	})
	return nil
}

// missing are the namespaces of the Pods the selection needs that no
// observed Pod is in.
func missing(images []prepull.Image, pods []*corev1.Pod, ns string) []string {
	var out []string
	for _, img := range images {
		if img.Fate != prepull.Pull {
			continue
		}
		home := prepull.Home(img, ns)
		if slices.Contains(out, home) || slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.Namespace == home }) {
			continue
		}
		out = append(out, home)
	}
	return out
}

// stale reports a Pod an earlier attempt left: with this attempt's
// placeholder there to tell by, one not on its surge node, or made for
// another placeholder — in the controller's namespace by its owner,
// elsewhere by the attempt it names (a Pod without that annotation, made
// before it existed, is told by its node alone). Without a placeholder
// the phase is being cut, and its Pods are taken as they are.
func stale(pod *corev1.Pod, obs *Observation, ns string) bool {
	ph := obs.Placeholder
	switch {
	case ph == nil:
		return false
	case obs.SurgeHost == nil || pod.Spec.NodeName != obs.SurgeHost.Name:
		return true
	case pod.Namespace == ns:
		return !slices.ContainsFunc(pod.OwnerReferences, func(ref metav1.OwnerReference) bool { return ref.UID == ph.UID })
	}
	attempt, ok := pod.Annotations[prepull.AttemptAnnotation]
	return ok && attempt != string(ph.UID)
}

// selectImages chooses the images of the Pods the drain moves that the
// surge node lacks. The cache drops a node's image list, so the surge
// node is read from the API server: once per pass that may create a Pod.
func (o *Observer) selectImages(ctx context.Context, obs *Observation) error {
	if obs.SurgeHost == nil || obs.OldNode == nil || !prepull.LinuxNode(obs.SurgeHost) {
		return nil
	}
	host := &corev1.Node{}
	if err := o.API.Get(ctx, client.ObjectKey{Name: obs.SurgeHost.Name}, host); err != nil {
		return fmt.Errorf("reading surge node %s's images: %w", obs.SurgeHost.Name, err)
	}
	pods, err := o.podsOn(ctx, obs, obs.OldNode.Name)
	if err != nil {
		return err
	}
	p := obs.Settings.PrePull
	obs.PrePull.Images = prepull.Select(pods, obs.OldNode, host, prepull.Options{MaxImages: p.MaxImages, Exclude: p.Exclude, UsePullSecrets: o.usePullSecrets(obs)})
	return nil
}

// usePullSecrets: the policy asks for the source Pods' secrets and the
// controller may create Pods where they are.
func (o *Observer) usePullSecrets(obs *Observation) bool {
	return obs.Settings.PrePull.UsePullSecrets && o.PullSecretsAllowed
}

// record is how the phase ends if it ends in this pass, and the images the
// Pod could not pull.
func record(obs *Observation) (*v1alpha1.PrePullRecord, []string) {
	r := &v1alpha1.PrePullRecord{Ended: v1alpha1.PrePullTimeout}
	if at, err := time.Parse(time.RFC3339, obs.Pool.Annotations[obs.Slot.Key(v1alpha1.AnnotationDrainingAt)]); err == nil && !obs.Now.Before(at) {
		r.Wait = obs.Now.Sub(at).Round(time.Second)
	}
	var failed []string
	pods := obs.PrePull.Pods
	if len(pods) > 0 {
		out := prepull.ReadAll(pods)
		r.Pulled, r.Failed, r.Unfinished, r.Skipped, failed = out.Pulled, out.Failed, out.Unfinished, out.Skipped, out.FailedImages
	} else {
		r.Skipped = prepull.Skipped(obs.PrePull.Images)
	}
	ended := prepull.AllEnded(pods) && len(obs.PrePull.Missing) == 0
	switch {
	case obs.Subject.DeletionTimestamp != nil || obs.Placeholder == nil:
		r.Ended = v1alpha1.PrePullCut
	case slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed }),
		ended && (r.Failed > 0 || len(failed) > 0):
		r.Ended = v1alpha1.PrePullFailed
	case ended && !slices.ContainsFunc(pods, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }):
		// Succeeded, or every image is on the node and the no-ops run
		r.Ended = v1alpha1.PrePullSucceeded
	case len(pods) == 0 && obs.PrePull.Begun && !prepull.Needed(obs.PrePull.Images):
		r.Ended = v1alpha1.PrePullNothing
	}
	return r, failed
}
