package observe

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// subject reads the objects around the claim a slot's observation is
// about: the slot's anchored claim, or, for the free slot, the stranded
// claim it re-adopts or the candidate a start takes.
func (o *Observer) subject(ctx context.Context, obs *Observation) error {
	anchor := obs.Anchor()
	obs.AnchorPaired = anchor != "" && obs.paired[anchor]
	switch {
	case anchor != "":
		obs.SubjectName = anchor
		for i := range obs.Claims {
			if obs.Claims[i].Name == anchor {
				obs.Subject = &obs.Claims[i]
			}
		}
		if obs.Subject == nil {
			if err := o.foreignAnchor(ctx, obs, anchor); err != nil {
				return err
			}
		}
	case len(obs.Stranded.Claims) > 0:
		// an anchorless pool re-adopts its stranded rotation before anything
		// new starts (docs/design.md#hardening)
		obs.Subject, obs.SubjectName = obs.Stranded.Claims[0], obs.Stranded.Claims[0].Name
	case obs.Candidate() != nil:
		obs.Subject, obs.SubjectName = obs.Candidate().Claim, obs.Candidate().Claim.Name
	default:
		return nil
	}
	if err := o.around(ctx, obs); err != nil {
		return err
	}
	return o.sizeIfNeeded(ctx, obs)
}

// foreignAnchor reports an anchor naming a claim of another pool: bad
// state, never acted on (the subject stays nil and the snapshot says gone
// only if the claim truly does not exist).
func (o *Observer) foreignAnchor(ctx context.Context, obs *Observation, anchor string) error {
	c := &karpv1.NodeClaim{}
	found, err := getOptional(ctx, o.Cache, client.ObjectKey{Name: anchor}, c)
	if err != nil || !found {
		return err
	}
	return &BadStateError{census.BadAnnotation{
		Object: "NodePool/" + obs.Pool.Name, Key: obs.Slot.Key(v1alpha1.AnnotationActiveRotation), Value: anchor,
		Problem: fmt.Sprintf("names a NodeClaim of NodePool %q", c.Labels[karpv1.NodePoolLabelKey]),
	}}
}

// BadStateError stops a pass: acting on it could be destructive.
type BadStateError struct{ census.BadAnnotation }

func (e *BadStateError) Error() string {
	return e.Sentence()
}

// around reads the old node, the placeholder, the surge host and its claim.
func (o *Observer) around(ctx context.Context, obs *Observation) error {
	if obs.Subject != nil && obs.Subject.Status.NodeName != "" {
		n := &corev1.Node{}
		if ok, err := getOptional(ctx, o.Cache, client.ObjectKey{Name: obs.Subject.Status.NodeName}, n); err != nil {
			return err
		} else if ok {
			obs.OldNode = n
		}
	}
	p := &corev1.Pod{}
	key := client.ObjectKey{Namespace: o.Namespace, Name: surge.PlaceholderName(obs.SubjectName)}
	if ok, err := getOptional(ctx, o.Cache, key, p); err != nil {
		return err
	} else if ok {
		obs.Placeholder = p
	}
	if obs.Placeholder != nil && obs.Placeholder.Spec.NodeName != "" {
		h := &corev1.Node{}
		if ok, err := getOptional(ctx, o.Cache, client.ObjectKey{Name: obs.Placeholder.Spec.NodeName}, h); err != nil {
			return err
		} else if ok {
			obs.SurgeHost = h
		}
		for i := range obs.Claims {
			if obs.Claims[i].Status.NodeName == obs.Placeholder.Spec.NodeName {
				obs.SurgeHostClaim = &obs.Claims[i]
			}
		}
	}
	obs.InducedClaim = inducedClaim(obs)
	obs.AvoidHostnames = o.avoid(ctx, obs)
	if err := o.prePull(ctx, obs); err != nil {
		return err
	}
	return o.unservable(ctx, obs)
}

// inducedClaim finds the surge NodeClaim the attempt induced: the one named
// by surge-claim, else the placeholder's host's claim, else a claim of the
// pool with no node yet, created since started-at. Only a claim created
// since started-at counts: one that predates the attempt was absorbed, not
// induced, and a rollback must never reap it.
func inducedClaim(obs *Observation) *karpv1.NodeClaim {
	if obs.Subject == nil {
		return nil
	}
	started, err := time.Parse(time.RFC3339, obs.Subject.Annotations[v1alpha1.AnnotationStartedAt])
	if err != nil {
		return nil
	}
	other := func(match func(*karpv1.NodeClaim) bool) *karpv1.NodeClaim {
		for i := range obs.Claims {
			if c := &obs.Claims[i]; c.Name != obs.SubjectName && match(c) {
				return c
			}
		}
		return nil
	}
	var target *karpv1.NodeClaim
	if name := obs.Subject.Annotations[v1alpha1.AnnotationSurgeClaim]; name != "" {
		target = other(func(c *karpv1.NodeClaim) bool { return c.Name == name })
	}
	if target == nil {
		target = obs.SurgeHostClaim
	}
	if target == nil {
		target = other(func(c *karpv1.NodeClaim) bool { return c.Status.NodeName == "" && surge.CreatedSince(c, started) })
	}
	if target == nil || !surge.CreatedSince(target, started) {
		return nil
	}
	return target
}

// avoid lists the hostnames the placeholder should avoid: the old node and
// the nodes of claims that are themselves due for rotation.
func (o *Observer) avoid(ctx context.Context, obs *Observation) []string {
	var out []string
	if obs.OldNode != nil {
		out = append(out, hostname(obs.OldNode))
	}
	for i := range obs.Claims {
		c := &obs.Claims[i]
		if c.Name == obs.SubjectName || c.Status.NodeName == "" {
			continue
		}
		if f, ok := obs.Census.Figures[c.Name]; ok && f.Due(obs.Now) {
			n := &corev1.Node{}
			if err := o.Cache.Get(ctx, client.ObjectKey{Name: c.Status.NodeName}, n); err == nil {
				out = append(out, hostname(n))
			}
		}
	}
	return out
}

func hostname(n *corev1.Node) string {
	if h := n.Labels[corev1.LabelHostname]; h != "" {
		return h
	}
	return n.Name
}

// sizeIfNeeded sizes the placeholder when this pass may create one or must
// check headroom: a start, a retry of a failed claim, or a pending claim
// whose placeholder is missing.
func (o *Observer) sizeIfNeeded(ctx context.Context, obs *Observation) error {
	if obs.Subject == nil || obs.Placeholder != nil || !obs.Governed() {
		return nil
	}
	state := obs.Subject.Annotations[v1alpha1.AnnotationState]
	if state == v1alpha1.StateDraining || state == v1alpha1.StateExpired {
		return nil
	}
	var pods []corev1.Pod
	if obs.OldNode != nil {
		var err error
		if pods, err = o.podsOn(ctx, obs, obs.OldNode.Name); err != nil {
			return err
		}
	}
	sz := surge.Size(pods, obs.OldNode, obs.Subject.Status.Allocatable, obs.Settings.WholeNodeReservation)
	obs.Sizing = &sz
	waiting := surge.Waiting(obs.placeholders, surge.PlaceholderName(obs.SubjectName))
	if short, ok := surge.HeadroomBeside(obs.Pool, sz.Requests, waiting); !ok {
		obs.Shortfall = &short
	}
	return nil
}
