package surge

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ClampBand is the shortfall, as a fraction of the request, within which a
// clamp is routine (SurgeClamped, Normal); beyond it the placeholder may be
// too small to hold the drained Pods (SurgeClampBandExceeded, Warning).
const ClampBand = 0.10

// Exclusions counts the old node's Pods left out of the reschedulable sum.
type Exclusions struct {
	DaemonSet int `json:"daemonSet"`
	Mirror    int `json:"mirror"`
	Terminal  int `json:"terminal"`
	Pinned    int `json:"pinned"`
}

// Sizing is the placeholder's requests and how they were reached.
type Sizing struct {
	Requests   corev1.ResourceList // what the placeholder asks for
	Sum        corev1.ResourceList // the reschedulable sum before the clamp
	Excluded   Exclusions
	Limit      corev1.ResourceList // allocatable − DaemonSet overhead (nil: no clamp)
	Clamped    []corev1.ResourceName
	Refused    []corev1.ResourceName // limit ≤ 0: the full request is kept
	BandExceed []corev1.ResourceName // clamped by more than ClampBand
}

// Size computes the placeholder's requests from the Pods on the old node,
// clamped to the claim's allocatable less DaemonSet overhead. wholeNode
// sizes it to the whole clamp limit instead.
func Size(pods []corev1.Pod, node *corev1.Node, allocatable corev1.ResourceList, wholeNode bool) Sizing {
	s := Sizing{Sum: corev1.ResourceList{}}
	overhead := corev1.ResourceList{}
	for i := range pods {
		p := &pods[i]
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		switch StaysBehind(p, node) {
		case StaysDaemonSet:
			s.Excluded.DaemonSet++
			add(overhead, req)
		case StaysMirror:
			s.Excluded.Mirror++
		case StaysTerminal:
			s.Excluded.Terminal++
		case StaysPinned:
			s.Excluded.Pinned++
		default:
			add(s.Sum, req)
		}
	}
	s.Requests = s.Sum.DeepCopy()
	if len(allocatable) == 0 {
		return s
	}
	s.Limit = corev1.ResourceList{}
	for name, alloc := range allocatable {
		limit := alloc.DeepCopy()
		if o, ok := overhead[name]; ok {
			limit.Sub(o)
		}
		if limit.Sign() < 0 {
			limit = resource.MustParse("0")
		}
		s.Limit[name] = limit
	}
	if wholeNode {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if l, ok := s.Limit[name]; ok && l.Sign() > 0 {
				s.Requests[name] = l.DeepCopy()
			}
		}
		return s
	}
	for name, want := range s.Sum {
		limit, ok := s.Limit[name]
		switch {
		case !ok || want.Cmp(limit) <= 0:
		case limit.Sign() <= 0:
			s.Refused = append(s.Refused, name)
		default:
			s.Clamped = append(s.Clamped, name)
			short := want.DeepCopy()
			short.Sub(limit)
			if short.AsApproximateFloat64() > ClampBand*want.AsApproximateFloat64() {
				s.BandExceed = append(s.BandExceed, name)
			}
			s.Requests[name] = limit.DeepCopy()
		}
	}
	return s
}

func add(into, req corev1.ResourceList) {
	for name, q := range req {
		cur := into[name]
		cur.Add(q)
		into[name] = cur
	}
}

func isDaemonSetPod(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

func isMirrorPod(p *corev1.Pod) bool {
	_, ok := p.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}

// pinnedTo reports a Pod that can only run on node: a hostname node
// selector or a required hostname (or metadata.name) affinity naming it.
// Such a Pod cannot move to the surge node; reserving room for it is waste.
func pinnedTo(p *corev1.Pod, node *corev1.Node) bool {
	if node == nil {
		return false
	}
	hostname := node.Labels[corev1.LabelHostname]
	if hostname != "" && p.Spec.NodeSelector[corev1.LabelHostname] == hostname {
		return true
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range append(term.MatchExpressions, term.MatchFields...) {
			if e.Operator != corev1.NodeSelectorOpIn || len(e.Values) != 1 {
				continue
			}
			if (e.Key == corev1.LabelHostname && e.Values[0] == hostname) || (e.Key == "metadata.name" && e.Values[0] == node.Name) {
				return true
			}
		}
	}
	return false
}
