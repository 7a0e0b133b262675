package actions

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/markers"
)

var repairStrandedAction = action{
	spec: engine.ActionSpec{Name: ActionRepairStranded,
		Description: "repair the pool's rotation artefacts no anchor names, as the startup sweep does, each re-checked against a fresh read of the pool's anchor: a stranded pending or draining claim is failed with a failure record, its placeholder deleted, its nodes unfrozen and uncordoned"},
	run: repairStranded,
}

// repairStranded repairs what a lost or overwritten anchor left live. The
// pool is read fresh first: an artefact the fresh anchor names is the live
// rotation's, never touched, whatever the cache showed.
func repairStranded(ctx context.Context, p *Pass, _ map[string]any) (Result, error) {
	np := &karpv1.NodePool{}
	if err := p.Fresh.Get(ctx, client.ObjectKey{Name: p.Targets.Pool.Name}, np); err != nil {
		return Result{}, fmt.Errorf("reading NodePool %s: %w", p.Targets.Pool.Name, err)
	}
	p.hold(np)
	// an artefact any slot's fresh anchor names is a live rotation's
	named := map[string]bool{}
	for _, a := range v1alpha1.Anchors(np.Annotations) {
		named[a.Claim] = true
	}
	var did []string
	claims, failed, err := p.failStranded(ctx, named)
	if err != nil {
		return Result{}, err
	}
	if p.stale {
		return unconfirmedResult("repair stranded"), nil // deletes after a refused write would go unannounced
	}
	did = append(did, claims...)
	for _, pod := range p.Targets.Stranded.Placeholders {
		if named[pod.Labels[v1alpha1.LabelSurgeFor]] {
			continue
		}
		err := p.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}, client.GracePeriodSeconds(0))
		switch {
		case err == nil:
			did = append(did, "deleted placeholder "+pod.Name)
		case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
			return Result{}, fmt.Errorf("deleting stranded placeholder %s: %w", pod.Name, err)
		}
	}
	nodes, err := p.reverseStranded(ctx, named)
	if err != nil {
		return Result{}, err
	}
	if p.stale {
		return unconfirmedResult("repair stranded"), nil
	}
	did = append(did, nodes...)
	if len(did) == 0 {
		return Result{Outcome: Done, Did: "nothing stranded on a fresh read"}, nil
	}
	return Result{Outcome: Done, Changed: true, Did: strings.Join(did, "; "), Repaired: strings.Join(did, "; "), FailedClaims: failed}, nil
}

// failStranded writes a failure record on each stranded claim still in
// flight, not deleting and not named by a fresh anchor; it returns what it
// did and the claims it failed.
func (p *Pass) failStranded(ctx context.Context, named map[string]bool) (did, failed []string, err error) {
	for _, sc := range p.Targets.Stranded.Claims {
		if named[sc.Name] {
			continue
		}
		c := p.claim(sc.Name)
		from := ""
		out, err := p.write(ctx, c, func() (bool, error) {
			if !markers.InFlight(c) || c.DeletionTimestamp != nil {
				// a claim whose delete was issued is draining: failing it would
				// open the gate mid-drain, so it holds the pool until it is gone
				return false, nil
			}
			from = c.Annotations[v1alpha1.AnnotationState]
			markers.RecordFailure(c, p.Targets.Now)
			return true, nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("failing stranded NodeClaim %s: %w", sc.Name, err)
		}
		if out == Claimed {
			did = append(did, "failed NodeClaim "+sc.Name+" (was "+from+")")
			failed = append(failed, sc.Name)
		}
	}
	return did, failed, nil
}

// reverseStranded takes our markers off each stranded node its copy still
// shows marked and not paired with an anchor.
func (p *Pass) reverseStranded(ctx context.Context, named map[string]bool) ([]string, error) {
	var did []string
	for _, sn := range p.Targets.Stranded.Nodes {
		n := p.node(sn.Name)
		what := ""
		out, err := p.write(ctx, n, func() (bool, error) {
			if !markers.Marked(n) || named[n.Labels[v1alpha1.LabelSurgeFor]] {
				return false, nil
			}
			what = markers.Reverse(n)
			return true, nil
		})
		if err != nil {
			return nil, fmt.Errorf("reversing markers on stranded Node %s: %w", sn.Name, err)
		}
		if out == Claimed && what != "" {
			did = append(did, what+" Node "+sn.Name)
		}
	}
	return did, nil
}
