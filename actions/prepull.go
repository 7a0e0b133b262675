package actions

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/conditional"
)

// The pre-pull phase's artefact and record (docs/design.md#pre-pull).
var (
	prePullEnsureAction = action{
		spec: engine.ActionSpec{Name: ActionPrePullEnsure, Description: "create the rotation's pre-pull Pods on the surge node that do not exist"},
		run:  prePullEnsure,
	}
	prePullDeleteAction = action{
		spec: engine.ActionSpec{Name: ActionPrePullDelete, Description: "delete the rotation's pre-pull Pods that exist"},
		run:  prePullDelete,
	}
	prePullRecordAction = action{
		spec: engine.ActionSpec{Name: ActionPrePullRecord, Reports: true, Description: "record how the pre-pull phase ended on the NodePool, once, while the anchor names the rotation"},
		run:  prePullRecord,
	}
)

// prePullEnsure creates the Pods the pass built — every one of the
// rotation's, made by the pass that observed none; none when nothing is to
// be pulled or no placeholder is there to depend on; a create that finds
// its Pod already there is done too. The pass that created the first of
// them the API server took is the one that says PrePullStarted, for the
// images of every Pod not refused: two passes that both observed none
// race each create, and only one of them made that first Pod.
func prePullEnsure(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	if len(p.Targets.NewPrePull) == 0 {
		if len(p.Targets.PrePull) > 0 {
			return Result{Outcome: Done, Did: "pre-pull Pod exists"}, nil
		}
		return Result{Outcome: Done, Did: "no pre-pull Pod to create"}, nil
	}
	if ok, err := p.confirmElection(ctx); !ok || err != nil {
		return unconfirmedResult("create pre-pull Pod"), err
	}
	// an earlier attempt's Pod holds the name its replacement needs; a
	// delete with no grace frees it at once
	if len(p.Targets.PrePullStale) > 0 {
		if res, err := deletePrePullPods(ctx, p, p.Targets.PrePullStale); err != nil || res.Outcome != Done {
			return res, err
		}
	}
	res := Result{Outcome: Done}
	var did, refused []string
	images, first := 0, -1 // first: whether the first Pod not refused was this pass's create
	for _, pod := range p.Targets.NewPrePull {
		pod = pod.DeepCopy()
		err := p.Client.Create(ctx, pod)
		switch {
		case apierrors.IsAlreadyExists(err):
			// the cache lagged a create this or another pass made: not ours to announce
			did = append(did, "pre-pull Pod "+pod.Namespace+"/"+pod.Name+" already exists")
			if first < 0 {
				first = 0
			}
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
			// an admission policy, a quota or a Pod Security level refuses it:
			// asking again changes nothing, and an error would back the pass
			// off past the phase's timeout, so the timeout ends the phase (or
			// the other Pods' end does) and PrePullRefused says why
			did = append(did, "pre-pull Pod "+pod.Namespace+"/"+pod.Name+" refused")
			refused = append(refused, pod.Namespace+"/"+pod.Name+": "+err.Error())
			continue
		case err != nil:
			return Result{}, fmt.Errorf("creating pre-pull Pod %s/%s: %w", pod.Namespace, pod.Name, err)
		default:
			did = append(did, fmt.Sprintf("created pre-pull Pod %s/%s (%d images)", pod.Namespace, pod.Name, len(pod.Spec.Containers)))
			if first < 0 {
				first = 1
			}
		}
		images += len(pod.Spec.Containers)
	}
	if first == 1 {
		res.Changed, res.PrePullImages = true, images
	}
	res.Did, res.PrePullRefused = strings.Join(did, "; "), strings.Join(refused, "; ")
	return res, nil
}

// prePullDelete deletes the observed Pods, the attempt's and any an
// earlier attempt left, at once (they hold nothing).
func prePullDelete(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	return deletePrePullPods(ctx, p, append(slices.Clone(p.Targets.PrePull), p.Targets.PrePullStale...))
}

// deletePrePullPods deletes pods, each only if it is still the one
// observed (UID precondition): a Pod a later attempt created under the
// same name is not this pass's to delete.
func deletePrePullPods(ctx context.Context, p *Pass, pods []*corev1.Pod) (Result, error) {
	if len(pods) == 0 {
		return Result{Outcome: Done, Did: "pre-pull Pod already gone"}, nil
	}
	if ok, err := p.confirmElection(ctx); !ok || err != nil {
		return unconfirmedResult("delete pre-pull Pod"), err
	}
	var did []string
	for _, pod := range pods {
		target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
		err := p.Client.Delete(ctx, target, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID},
			client.PropagationPolicy(metav1.DeletePropagationBackground))
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			did = append(did, "pre-pull Pod "+pod.Namespace+"/"+pod.Name+" already gone")
		case err != nil:
			return Result{}, fmt.Errorf("deleting pre-pull Pod %s/%s: %w", pod.Namespace, pod.Name, err)
		default:
			did = append(did, "deleted pre-pull Pod "+pod.Namespace+"/"+pod.Name)
		}
	}
	return Result{Outcome: Done, Did: strings.Join(did, "; ")}, nil
}

// prePullRecord writes the phase's record on the pool once, only while the
// anchor names this rotation: the pass whose write lands is the one that
// says PrePullEnded; another finds the record and races.
func prePullRecord(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	rec := p.Targets.PrePullRecord
	if rec == nil {
		return Result{}, fmt.Errorf("pre-pull record for %s: the pass observed no phase", p.Targets.Claim)
	}
	np := p.pool()
	key := p.Targets.Slot.Key(v1alpha1.AnnotationPrePull)
	out, err := p.write(ctx, np, func() (bool, error) {
		a := np.Annotations
		if a[p.Targets.Slot.Key(v1alpha1.AnnotationActiveRotation)] != p.Targets.Claim || a[key] != "" {
			return false, nil
		}
		conditional.SetAnnotation(np, key, rec.String())
		return true, nil
	})
	res := Result{Outcome: out, Did: "pre-pull record: " + string(out)}
	if out == Claimed {
		r := *rec
		res.PrePull = &PrePullEnd{Record: r, FailedImages: p.Targets.PrePullFailed}
	}
	return res, err
}
