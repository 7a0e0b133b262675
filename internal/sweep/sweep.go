// Package sweep is the startup sweep (docs/design.md#startup-sweep): run
// once before the first reconcile, best-effort, it removes what a crash can
// leave behind and no anchor references — placeholders and pre-pull Pods,
// node markers, an orphaned draining mirror — and fails a pending/draining
// claim that no anchor owns. It never touches what an anchored rotation owns, and every
// line it logs names work it performed, decided from the read its write was
// validated against. Its writes go through package conditional, like the
// actions'.
package sweep

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/conditional"
	"github.com/noderotation/node-rotation-controller/internal/markers"
)

// Announcer says what the sweep did and what it could not do: every line
// of the sweep is worded there (internal/announce), the claim it failed
// being an alert (docs/design.md#startup-sweep).
type Announcer interface {
	SweptClaim(claim *karpv1.NodeClaim, from string)
	SweptPlaceholder(placeholder, claim string)
	SweptPrePullPod(pod, claim string)
	SweptNode(node, did string)
	SweptMirror(pool string)
	SweepFailed(err error, doing string, kv ...any)
}

// Sweeper holds the sweep's clients.
type Sweeper struct {
	Client    client.Client // writes, and the List the sweep selects from
	Fresh     client.Reader // the reads writes are validated against
	Namespace string
	// PrePullEverywhere: pre-pull Pods may live in every namespace
	// (usePullSecrets), so the sweep looks for them there.
	PrePullEverywhere bool
	// Say is required: every line of the sweep is said through it.
	Say Announcer
	// Clock stamps failed-at; time.Now when nil.
	Clock func() time.Time
}

func (s *Sweeper) now() time.Time {
	if s.Clock == nil {
		return time.Now()
	}
	return s.Clock()
}

// Run sweeps once. Errors are per item: logged, never fatal.
func (s *Sweeper) Run(ctx context.Context) {
	anchored, err := s.anchors(ctx)
	if err != nil {
		s.Say.SweepFailed(err, "skipped: cannot list NodePools")
		return
	}
	s.prePullPods(ctx, anchored)
	s.placeholders(ctx, anchored)
	s.nodes(ctx, anchored)
	s.claims(ctx, anchored)
	s.mirrors(ctx)
}

// anchors is the set of claims an anchor references, captured once.
func (s *Sweeper) anchors(ctx context.Context) (map[string]bool, error) {
	pools := &karpv1.NodePoolList{}
	if err := s.Client.List(ctx, pools); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, p := range pools.Items {
		for _, a := range v1alpha1.Anchors(p.Annotations) { // every slot's (docs/design.md#throughput)
			out[a.Claim] = true
		}
	}
	return out, nil
}

// prePullPods deletes the pre-pull Pods no anchor references
// (docs/design.md#pre-pull). The garbage collector removes one whose
// placeholder is deleted; the sweep does not wait on it, and sweeps them
// before the placeholders so each delete is its own.
func (s *Sweeper) prePullPods(ctx context.Context, anchored map[string]bool) {
	var where []client.ListOption
	if !s.PrePullEverywhere {
		where = append(where, client.InNamespace(s.Namespace))
	}
	s.pods(ctx, anchored, v1alpha1.LabelPrePullFor, "pre-pull Pod", func(p *corev1.Pod, claim string) {
		s.Say.SweptPrePullPod(p.Namespace+"/"+p.Name, claim)
	}, where...)
}

func (s *Sweeper) placeholders(ctx context.Context, anchored map[string]bool) {
	s.pods(ctx, anchored, v1alpha1.LabelSurgeFor, "placeholder", func(p *corev1.Pod, claim string) {
		s.Say.SweptPlaceholder(p.Name, claim)
	}, client.InNamespace(s.Namespace))
}

// pods deletes the controller-namespace Pods whose label names a claim no
// anchor references, re-reading the pool's anchors before each delete.
func (s *Sweeper) pods(ctx context.Context, anchored map[string]bool, label, what string, swept func(pod *corev1.Pod, claim string), where ...client.ListOption) {
	pods := &corev1.PodList{}
	if err := s.Client.List(ctx, pods, append(where, client.HasLabels{label})...); err != nil {
		s.Say.SweepFailed(err, "listing "+what+"s")
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		claim := p.Labels[label]
		if anchored[claim] || s.anchoredNow(ctx, p.Labels[v1alpha1.LabelNodePool], claim) {
			continue
		}
		err := s.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}, client.GracePeriodSeconds(0))
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		case err != nil:
			s.Say.SweepFailed(err, "deleting "+what, what, p.Name, "namespace", p.Namespace)
		default:
			swept(p, claim)
		}
	}
}

// nodes reverses markers no anchor references, re-applying the selection
// to the fresh read the write is validated against.
func (s *Sweeper) nodes(ctx context.Context, anchored map[string]bool) {
	nodes := &corev1.NodeList{}
	if err := s.Client.List(ctx, nodes); err != nil {
		s.Say.SweepFailed(err, "listing nodes")
		return
	}
	claimOfNode, err := s.claimsByNode(ctx)
	if err != nil {
		s.Say.SweepFailed(err, "listing NodeClaims")
		return
	}
	for i := range nodes.Items {
		if !markers.Marked(&nodes.Items[i]) {
			continue
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodes.Items[i].Name}}
		var did string
		out, err := conditional.Write(ctx, s.Fresh, s.Client, n, func() (bool, error) {
			pair := n.Labels[v1alpha1.LabelSurgeFor]
			owner := pair
			if owner == "" {
				owner = claimOfNode[n.Name]
			}
			if !markers.Marked(n) || anchored[owner] || s.anchoredNow(ctx, n.Labels[karpv1.NodePoolLabelKey], owner) {
				return false, nil // current markers of an anchored rotation, or already reversed
			}
			did = markers.Reverse(n)
			return true, nil
		})
		switch {
		case err != nil:
			s.Say.SweepFailed(err, "reversing node markers", "node", n.Name)
		case out == conditional.Claimed && did != "":
			s.Say.SweptNode(n.Name, did)
		}
	}
}

// anchoredNow re-reads pool fresh and reports whether one of its slots'
// anchors names claim: the anchors the sweep started from are a snapshot, and with two
// instances another may have started this very rotation since. A failed
// read counts as anchored: the sweep never acts on what it cannot check.
func (s *Sweeper) anchoredNow(ctx context.Context, pool, claim string) bool {
	if pool == "" || claim == "" {
		return false
	}
	np := &karpv1.NodePool{}
	if err := s.Fresh.Get(ctx, client.ObjectKey{Name: pool}, np); err != nil {
		return !apierrors.IsNotFound(err)
	}
	for _, a := range v1alpha1.Anchors(np.Annotations) {
		if a.Claim == claim {
			return true
		}
	}
	return false
}

func (s *Sweeper) claimsByNode(ctx context.Context) (map[string]string, error) {
	claims := &karpv1.NodeClaimList{}
	if err := s.Client.List(ctx, claims); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, c := range claims.Items {
		if c.Status.NodeName != "" {
			out[c.Status.NodeName] = c.Name
		}
	}
	return out, nil
}

// claims fails a pending/draining claim no anchor owns — impossible from
// any crash point, so an alert — conditionally on the predicate that
// selected it, and alerts only when that write lands.
func (s *Sweeper) claims(ctx context.Context, anchored map[string]bool) {
	claims := &karpv1.NodeClaimList{}
	if err := s.Client.List(ctx, claims); err != nil {
		s.Say.SweepFailed(err, "listing NodeClaims")
		return
	}
	for _, c := range claims.Items {
		state := c.Annotations[v1alpha1.AnnotationState]
		if anchored[c.Name] || (state != v1alpha1.StatePending && state != v1alpha1.StateDraining) {
			continue
		}
		nc := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: c.Name}}
		var from string
		out, err := conditional.Write(ctx, s.Fresh, s.Client, nc, func() (bool, error) {
			from = nc.Annotations[v1alpha1.AnnotationState]
			if from != v1alpha1.StatePending && from != v1alpha1.StateDraining || s.anchoredNow(ctx, nc.Labels[karpv1.NodePoolLabelKey], nc.Name) {
				return false, nil
			}
			// A real failure write, as the rollback's: the claim waits out its
			// escalated backoff, then becomes a candidate again.
			markers.RecordFailure(nc, s.now())
			return true, nil
		})
		if err != nil {
			s.Say.SweepFailed(err, "failing an unanchored claim", "nodeclaim", c.Name)
			continue
		}
		if out == conditional.Claimed {
			s.Say.SweptClaim(nc, from)
		}
	}
}

// mirrors removes the rotation-scoped keys a slot without an anchor still
// carries (docs/design.md#throughput: each slot's own set).
func (s *Sweeper) mirrors(ctx context.Context) {
	pools := &karpv1.NodePoolList{}
	if err := s.Client.List(ctx, pools); err != nil {
		return
	}
	for _, p := range pools.Items {
		if len(orphanedScoped(p.Annotations)) == 0 {
			continue
		}
		np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: p.Name}}
		out, err := conditional.Write(ctx, s.Fresh, s.Client, np, func() (bool, error) {
			keys := orphanedScoped(np.Annotations)
			for _, k := range keys {
				delete(np.Annotations, k)
			}
			return len(keys) > 0, nil
		})
		if err != nil {
			s.Say.SweepFailed(err, "removing an orphaned mirror", "nodepool", p.Name)
		} else if out == conditional.Claimed {
			s.Say.SweptMirror(p.Name)
		}
	}
}

// orphanedScoped are the rotation-scoped keys of the slots without an
// anchor.
func orphanedScoped(a map[string]string) []string {
	var out []string
	for k := range a {
		slot, base, ok := v1alpha1.SlotOf(k)
		if ok && base != v1alpha1.AnnotationLastRotationAt &&
			a[slot.Key(v1alpha1.AnnotationActiveRotation)] == "" {
			out = append(out, k)
		}
	}
	return out
}
