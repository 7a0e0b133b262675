package recorder

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// Timeline renders, one line each in resourceVersion order, the records
// after sinceRV of pool's NodePool, NodeClaims and Nodes and of its
// placeholder Pods in placeholderNS, with the rotation's keys and the facts
// a rotation reads (deleting, the claim's node, cordon, Ready, a Pod's
// phase and node). A record that changed none of these is skipped. A
// failing suite prints it so the cause shows from CI output alone.
func (r *Recorder) Timeline(sinceRV int64, pool, placeholderNS string) string {
	var b strings.Builder
	var t0 time.Time
	last := map[string]string{}
	for _, rec := range r.Sorted() {
		if rec.RV <= sinceRV || !ofPool(rec, pool, placeholderNS) {
			continue
		}
		if t0.IsZero() {
			t0 = rec.Seen
		}
		desc := Describe(rec)
		key := rec.Kind + "/" + rec.Obj.GetName()
		if last[key] == desc && rec.Type == watch.Modified {
			continue // a status update that changed nothing of a rotation's
		}
		last[key] = desc
		fmt.Fprintf(&b, "%7.1fs rv=%d %-8s %s/%s %s\n", rec.Seen.Sub(t0).Seconds(), rec.RV, rec.Type, rec.Kind, rec.Obj.GetName(), desc)
	}
	return b.String()
}

func ofPool(rec Record, pool, placeholderNS string) bool {
	switch rec.Kind {
	case "NodePool":
		return rec.Obj.GetName() == pool
	case "NodeClaim", "Node":
		return rec.Obj.GetLabels()[karpv1.NodePoolLabelKey] == pool
	case "Pod":
		return rec.Obj.GetNamespace() == placeholderNS && rec.Obj.GetLabels()[v1alpha1.LabelNodePool] == pool
	}
	return false
}

// Describe is a record's rotation keys (our labels and annotations and
// Karpenter's do-not-disrupt) and the facts a rotation reads.
func Describe(rec Record) string {
	var parts []string
	for _, m := range []map[string]string{rec.Obj.GetLabels(), rec.Obj.GetAnnotations()} {
		keys := make([]string, 0, len(m))
		for k := range m {
			if strings.HasPrefix(k, v1alpha1.Prefix) || k == v1alpha1.KarpenterDoNotDisrupt {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts = append(parts, strings.TrimPrefix(k, v1alpha1.Prefix)+"="+m[k])
		}
	}
	if rec.Obj.GetDeletionTimestamp() != nil && rec.Type != watch.Deleted {
		parts = append(parts, "deleting")
	}
	switch o := rec.Obj.(type) {
	case *karpv1.NodeClaim:
		if o.Status.NodeName != "" {
			parts = append(parts, "node="+o.Status.NodeName)
		}
	case *corev1.Node:
		if o.Spec.Unschedulable {
			parts = append(parts, "unschedulable")
		}
		for _, c := range o.Status.Conditions {
			if c.Type == corev1.NodeReady {
				parts = append(parts, "Ready="+string(c.Status))
			}
		}
	case *corev1.Pod:
		parts = append(parts, "phase="+string(o.Status.Phase))
		if o.Spec.NodeName != "" {
			parts = append(parts, "on="+o.Spec.NodeName)
		}
	}
	return strings.Join(parts, " ")
}
