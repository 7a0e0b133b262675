package surge

import (
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// DefaultImage is the placeholder's container: it only holds a reservation.
const DefaultImage = "registry.k8s.io/pause:3.10"

// namePrefix names placeholders so an operator can spot them.
const namePrefix = "nrc-surge-"

// PlaceholderName is the placeholder Pod's name for a rotating claim.
func PlaceholderName(claim string) string { return namePrefix + claim }

// placeholderComponent is the placeholder Pods' app.kubernetes.io/component.
const placeholderComponent = "surge-placeholder"

// Placeholder describes the placeholder Pod to build.
type Placeholder struct {
	Namespace, PriorityClass, Image string
	Pool                            *karpv1.NodePool
	Claim                           *karpv1.NodeClaim
	OldNode                         *corev1.Node // nil when the claim has no node
	Requests                        corev1.ResourceList
	Required, Preferred             []string
	// AvoidHostnames are the candidate's and near-deadline nodes' hostnames,
	// avoided softly (Karpenter refuses required hostname anti-affinity).
	AvoidHostnames []string
	// Spread: the pool may have several rotations in flight, so its
	// placeholders repel each other on the hostname (required pod
	// anti-affinity): each rotation's placeholder leads Karpenter to a surge
	// node of its own, never one bigger node for several that one
	// rotation's rollback would reap under another
	// (docs/design.md#throughput). Nor may it land on another rotation's
	// surge host (required node affinity: no surge-for label): that host
	// is labelled before its own placeholder is deleted, and the room the
	// deletion frees is for that rotation's drained Pods — a placeholder
	// taking it would send them to a node not yet there. Off at one
	// rotation at a time, where the placeholder is as it always was.
	Spread bool
}

// Build returns the placeholder Pod: a bare Pod (no owner controller) in
// the controller's namespace, labelled surge-for=<claim>, with the negative
// PriorityClass and preemptionPolicy Never, a pause container, the pool's
// node selector, tolerations for its taints and replicated requirements.
func (p Placeholder) Build() *corev1.Pod {
	required, preferred := Requirements(p.Required, p.Preferred, p.OldNode, p.Claim, p.Pool)
	if p.Spread {
		required = append(required, corev1.NodeSelectorRequirement{Key: v1alpha1.LabelSurgeFor, Operator: corev1.NodeSelectorOpDoesNotExist})
	}
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
	if len(required) > 0 {
		affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: required}},
		}
	}
	if len(preferred) > 0 {
		affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: 50, Preference: corev1.NodeSelectorTerm{MatchExpressions: preferred}})
	}
	if avoid := uniqueSorted(p.AvoidHostnames); len(avoid) > 0 {
		affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = append(affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution,
			corev1.PreferredSchedulingTerm{Weight: 100, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: avoid},
			}}})
	}
	if p.Spread {
		affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{
				v1alpha1.LabelNodePool: p.Pool.Name, "app.kubernetes.io/component": placeholderComponent,
			}},
			TopologyKey: corev1.LabelHostname,
		}}}
	}
	image := p.Image
	if image == "" {
		image = DefaultImage
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      PlaceholderName(p.Claim.Name),
			Namespace: p.Namespace,
			Labels: map[string]string{
				v1alpha1.LabelSurgeFor:        p.Claim.Name,
				v1alpha1.LabelNodePool:        p.Pool.Name,
				v1alpha1.LabelManagedBy:       v1alpha1.ManagedBy,
				"app.kubernetes.io/component": placeholderComponent,
			},
		},
		Spec: corev1.PodSpec{
			PriorityClassName:             p.PriorityClass,
			PreemptionPolicy:              ptr.To(corev1.PreemptNever),
			NodeSelector:                  map[string]string{karpv1.NodePoolLabelKey: p.Pool.Name},
			Tolerations:                   Tolerations(p.Pool),
			Affinity:                      affinity,
			TerminationGracePeriodSeconds: ptr.To(int64(0)),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To(int64(65535)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:      "reserve",
				Image:     image,
				Resources: corev1.ResourceRequirements{Requests: p.Requests},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// Tolerations tolerate every taint of the pool's template, so the
// placeholder lands where the pool's workloads do.
func Tolerations(pool *karpv1.NodePool) []corev1.Toleration {
	var out []corev1.Toleration
	for _, t := range pool.Spec.Template.Spec.Taints {
		tol := corev1.Toleration{Key: t.Key, Effect: t.Effect, Operator: corev1.TolerationOpEqual, Value: t.Value}
		if t.Value == "" {
			tol.Operator, tol.Value = corev1.TolerationOpExists, ""
		}
		out = append(out, tol)
	}
	return out
}

// Requirements replicates the required and preferred label keys: values
// from the old Node's labels (authoritative) or else the claim's In
// requirement, intersected with what the pool template allows; a claim's
// numeric Gt/Lt requirement is kept exactly; a key absent from both, or
// whose intersection is empty, is skipped.
func Requirements(required, preferred []string, node *corev1.Node, claim *karpv1.NodeClaim, pool *karpv1.NodePool) (req, pref []corev1.NodeSelectorRequirement) {
	for _, k := range required {
		if r, ok := replicate(k, node, claim, pool); ok {
			req = append(req, r)
		}
	}
	for _, k := range preferred {
		if r, ok := replicate(k, node, claim, pool); ok {
			pref = append(pref, r)
		}
	}
	return req, pref
}

func replicate(key string, node *corev1.Node, claim *karpv1.NodeClaim, pool *karpv1.NodePool) (corev1.NodeSelectorRequirement, bool) {
	var values []string
	if v, ok := nodeLabel(node, key); ok {
		values = []string{v}
	} else {
		for _, r := range claim.Spec.Requirements {
			if r.Key != key {
				continue
			}
			switch r.Operator {
			case corev1.NodeSelectorOpIn:
				values = append([]string{}, r.Values...)
			case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
				return corev1.NodeSelectorRequirement{Key: key, Operator: r.Operator, Values: append([]string{}, r.Values...)}, true
			}
		}
	}
	for _, r := range pool.Spec.Template.Spec.Requirements {
		if r.Key == key {
			values = allowed(values, r.Operator, r.Values)
		}
	}
	if len(values) == 0 {
		return corev1.NodeSelectorRequirement{}, false
	}
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: uniqueSorted(values)}, true
}

// allowed keeps the values a pool requirement admits.
func allowed(values []string, op corev1.NodeSelectorOperator, ruleValues []string) []string {
	var out []string
	for _, v := range values {
		ok := true
		switch op {
		case corev1.NodeSelectorOpIn:
			ok = slices.Contains(ruleValues, v)
		case corev1.NodeSelectorOpNotIn:
			ok = !slices.Contains(ruleValues, v)
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			ok = numericAllows(op, v, ruleValues)
		}
		if ok {
			out = append(out, v)
		}
	}
	return out
}

func numericAllows(op corev1.NodeSelectorOperator, v string, ruleValues []string) bool {
	if len(ruleValues) != 1 {
		return false
	}
	x, err1 := strconv.ParseInt(v, 10, 64)
	bound, err2 := strconv.ParseInt(ruleValues[0], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if op == corev1.NodeSelectorOpGt {
		return x > bound
	}
	return x < bound
}

func uniqueSorted(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func nodeLabel(node *corev1.Node, key string) (string, bool) {
	if node == nil {
		return "", false
	}
	v, ok := node.Labels[key]
	return v, ok
}
