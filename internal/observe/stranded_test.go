package observe

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

func marked(pair string, ann ...string) func(*corev1.Node) {
	return func(n *corev1.Node) {
		if pair != "" {
			n.Labels[v1alpha1.LabelSurgeFor] = pair
		}
		for i := 0; i+1 < len(ann); i += 2 {
			n.Annotations[ann[i]] = ann[i+1]
		}
	}
}

// The anchor was overwritten: the other claim's pending rotation, its
// placeholder and its node are stranded; the anchored rotation's are not.
func TestStrandedByAnOverwrittenAnchor(t *testing.T) {
	obs := observeNow(t, nodePool(anchored("general-a")), governing(),
		nodeClaim("general-a", 20*time.Minute, "node-a", inState("pending")),
		nodeClaim("general-b", 20*time.Minute, "node-b", inState("pending"), startedAt(now.Add(-time.Minute))),
		nodeClaim("general-c", 20*time.Minute, "node-c"),
		node("node-a", marked("general-a", v1alpha1.AnnotationCordoned, "true")),
		node("node-b", marked("general-b", v1alpha1.AnnotationCordoned, "true")),
		node("node-c", marked("", v1alpha1.AnnotationCordoned, "true")),    // a leftover cordon of ours
		node("node-d", marked("", v1alpha1.KarpenterDoNotDisrupt, "true")), // the operator's own: not ours
		placeholderPod("general-a", ""), placeholderPod("general-b", ""),
	)
	s := obs.Stranded
	if len(s.Claims) != 1 || s.Claims[0].Name != "general-b" {
		t.Errorf("stranded claims %v, want general-b", names(s.Claims))
	}
	if len(s.Placeholders) != 1 || s.Placeholders[0].Name != "nrc-surge-general-b" {
		t.Errorf("stranded placeholders %d", len(s.Placeholders))
	}
	var nodes []string
	for _, n := range s.Nodes {
		nodes = append(nodes, n.Name)
	}
	if len(nodes) != 2 || nodes[0] != "node-b" || nodes[1] != "node-c" {
		t.Errorf("stranded nodes %v, want node-b and node-c", nodes)
	}
	if s.Kind() != "claim" || obs.Snapshot.Stranded != "claim" || !obs.AnchorPaired || !obs.Snapshot.Surge.PairedNodes {
		t.Errorf("kind %s snapshot %q paired %v", s.Kind(), obs.Snapshot.Stranded, obs.AnchorPaired)
	}
	if obs.SubjectName != "general-a" {
		t.Errorf("subject %s: the anchored claim stays the subject", obs.SubjectName)
	}
}

// An anchorless pool with a stranded claim makes it the subject, the one
// furthest along first, so the pass can re-adopt it.
func TestStrandedClaimIsTheSubjectOfAnAnchorlessPool(t *testing.T) {
	obs := observeNow(t, nodePool(), governing(),
		nodeClaim("general-p", 20*time.Minute, "", inState("pending"), startedAt(now.Add(-2*time.Minute))),
		nodeClaim("general-d", 20*time.Minute, "", inState("draining")),
		nodeClaim("general-due", 1*time.Minute, ""),
	)
	if obs.Snapshot.Stranded != "claim" || obs.SubjectName != "general-d" {
		t.Errorf("stranded %q subject %s, want claim and the draining general-d", obs.Snapshot.Stranded, obs.SubjectName)
	}
	clean := observeNow(t, nodePool(), governing(), nodeClaim("general-due", 1*time.Minute, ""))
	if clean.Snapshot.Stranded != "none" || clean.Stranded.Kind() != "none" {
		t.Errorf("a clean pool: %q", clean.Snapshot.Stranded)
	}
	onlyMarks := observeNow(t, nodePool(), governing(), node("node-x", marked("general-gone")))
	if onlyMarks.Snapshot.Stranded != "artefacts" {
		t.Errorf("only node markers: %q, want artefacts", onlyMarks.Snapshot.Stranded)
	}
}

func names(cs []*karpv1.NodeClaim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// An ungoverned pool starts nothing, so nothing can overtake its stranded
// rotation: what it left is the startup sweep's, not a pass's.
func TestStrandedIsLookedForInGovernedPoolsOnly(t *testing.T) {
	obs := observeNow(t, nodePool(),
		nodeClaim("general-p", 20*time.Minute, "", inState("pending")),
		node("node-x", marked("general-gone")))
	if obs.Snapshot.Stranded != "none" || obs.Stranded.Kind() != "none" {
		t.Errorf("ungoverned pool: stranded %q", obs.Snapshot.Stranded)
	}
}
