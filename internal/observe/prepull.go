package observe

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/prepull"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// PrePull is the rotation's pre-pull phase as one pass saw it
// (docs/design.md#pre-pull).
type PrePull struct {
	// Pod is the pre-pull Pod, nil when absent.
	Pod *corev1.Pod
	// Images is the selection, made only when a Pod may have to be
	// created: at surge-ready, and in draining while the placeholder is
	// kept and no Pod exists.
	Images []prepull.Image
	// Begun: the draining state kept the placeholder for the phase, so
	// the phase ends with a record even when nothing is left to pull.
	Begun bool
	// Record is how the phase ends if it ends now, with the images the
	// Pod could not pull; nil when no phase is under way.
	Record *v1alpha1.PrePullRecord
	// Failed are the images the Pod could not pull (the installer's too).
	Failed []string
}

// The surge.prePull input's values (engine.SurgeObservation.PrePull).
const (
	prePullAbsent  = "absent"
	prePullRunning = "running"
	prePullEnded   = "ended"
)

// State is the engine's surge.prePull input: the Pod's state, absent when
// one is to be created, ended when the phase was begun with nothing left
// to pull, empty when there is no phase.
func (p PrePull) State() string {
	switch {
	case p.Pod != nil && prepull.Ended(p.Pod):
		return prePullEnded
	case p.Pod != nil:
		return prePullRunning
	case prepull.Needed(p.Images):
		return prePullAbsent
	case p.Begun:
		return prePullEnded
	}
	return ""
}

// prePull observes the phase of the slot's rotation: only for a governed
// pool whose policy turns it on, only until the pool records its end.
func (o *Observer) prePull(ctx context.Context, obs *Observation) error {
	if !obs.Governed() || !obs.Settings.PrePull.Enabled || obs.Subject == nil ||
		obs.Pool.Annotations[obs.Slot.Key(v1alpha1.AnnotationPrePull)] != "" {
		return nil
	}
	pod := &corev1.Pod{}
	if ok, err := getOptional(ctx, o.Cache, client.ObjectKey{Namespace: o.Namespace, Name: prepull.PodName(obs.SubjectName)}, pod); err != nil {
		return err
	} else if ok {
		obs.PrePull.Pod = pod
	}
	state := obs.Subject.Annotations[v1alpha1.AnnotationState]
	kept := obs.Placeholder != nil && obs.Placeholder.DeletionTimestamp == nil
	old := ""
	if obs.OldNode != nil {
		old = obs.OldNode.Name
	}
	switch {
	case obs.PrePull.Pod != nil:
		obs.PrePull.Pod = stale(obs.PrePull.Pod, obs)
	case state == v1alpha1.StateDraining && kept:
		obs.PrePull.Begun = true
		if err := o.selectImages(ctx, obs); err != nil {
			return err
		}
	case state == v1alpha1.StatePending && surge.Ready(obs.Placeholder, obs.SurgeHost, old, obs.Pool.Name):
		if err := o.selectImages(ctx, obs); err != nil {
			return err
		}
	}
	if state == v1alpha1.StateDraining {
		obs.PrePull.Record, obs.PrePull.Failed = record(obs)
	}
	return nil
}

// stale marks a Pod left by an earlier attempt — another placeholder's
// dependent, or on another node — as ended: the phase records it and
// deletes it, and no image of this attempt waits on it.
func stale(pod *corev1.Pod, obs *Observation) *corev1.Pod {
	ours := obs.Placeholder != nil && obs.SurgeHost != nil && pod.Spec.NodeName == obs.SurgeHost.Name
	if ours {
		ours = false
		for _, ref := range pod.OwnerReferences {
			ours = ours || ref.UID == obs.Placeholder.UID
		}
	}
	if ours {
		return pod
	}
	pod = pod.DeepCopy()
	pod.Status.Phase = corev1.PodFailed
	return pod
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
	obs.PrePull.Images = prepull.Select(pods, obs.OldNode, host, prepull.Options{MaxImages: p.MaxImages, Exclude: p.Exclude, UsePullSecrets: p.UsePullSecrets})
	return nil
}

// record is how the phase ends if it ends in this pass, and the images the
// Pod could not pull.
func record(obs *Observation) (*v1alpha1.PrePullRecord, []string) {
	r := &v1alpha1.PrePullRecord{Ended: v1alpha1.PrePullTimeout}
	if at, err := time.Parse(time.RFC3339, obs.Pool.Annotations[obs.Slot.Key(v1alpha1.AnnotationDrainingAt)]); err == nil && !obs.Now.Before(at) {
		r.Wait = obs.Now.Sub(at).Round(time.Second)
	}
	var failed []string
	pod := obs.PrePull.Pod
	if pod != nil {
		out := prepull.Read(pod)
		r.Pulled, r.Failed, r.Unfinished, r.Skipped, failed = out.Pulled, out.Failed, out.Unfinished, out.Skipped, out.FailedImages
	} else {
		r.Skipped = prepull.Skipped(obs.PrePull.Images)
	}
	switch {
	case obs.Subject.DeletionTimestamp != nil || obs.Placeholder == nil:
		r.Ended = v1alpha1.PrePullCut
	case pod != nil && pod.Status.Phase == corev1.PodFailed,
		pod != nil && prepull.Ended(pod) && (r.Failed > 0 || len(failed) > 0):
		r.Ended = v1alpha1.PrePullFailed
	case pod != nil && prepull.Ended(pod) && pod.DeletionTimestamp == nil:
		// Succeeded, or every image is on the node and the no-ops run
		r.Ended = v1alpha1.PrePullSucceeded
	case pod == nil && obs.PrePull.Begun && !prepull.Needed(obs.PrePull.Images):
		r.Ended = v1alpha1.PrePullNothing
	}
	return r, failed
}
