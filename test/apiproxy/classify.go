package apiproxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	kscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
)

// Write is one mutating request the proxy saw, classified.
type Write struct {
	Seq         int       // 1-based, in the order the proxy received them
	Time        time.Time // when the proxy received it
	Verb        string    // POST, PUT, PATCH or DELETE
	Resource    string    // plural resource name, e.g. nodepools
	Subresource string    // e.g. eviction, status; empty for the object itself
	Namespace   string
	// Name is the object's: for a POST, read from a JSON body's
	// metadata.name (empty when the body says none, or is not JSON).
	Name string
	// Keys are the rotation keys a PATCH of a node, NodeClaim or NodePool
	// sets ("+key") or removes ("-key"), sorted: see Classify.
	Keys []string
	// Type is the write type: verb, resource[/subresource] and Keys but
	// the incidental ones. Two writes of one type change the same things
	// in the same direction.
	Type string
	// Background writes (leases, events, access reviews, server-side dry
	// runs) are counted and recorded but never killed after or faulted:
	// they are not steps of a rotation — a dry run changes nothing — and
	// faulting them tests client-go rather than the controller.
	Background bool
	DryRun     bool
	// Status is the HTTP status the client received — for a kill, the one
	// the API server answered, which the client never read.
	Status int
	// Upstream is the API server's status: 0 when the proxy answered alone
	// (a fault that was not forwarded).
	Upstream int
	Fault    Fault
	Killed   bool // the controller was killed after this write was applied
}

// Applied reports whether the API server accepted the write.
func (w Write) Applied() bool { return w.Upstream >= 200 && w.Upstream < 300 }

// Interrupted reports whether the write landed but its client never learned
// it: killed before the answer, or answered 500 after it was applied. These
// are the writes after which the design accepts that an announcement is
// lost (docs/design.md#anchor-protocol: at-most-once).
func (w Write) Interrupted() bool {
	return w.Applied() && (w.Killed || w.Fault == FaultApplyThen500)
}

func (w Write) String() string {
	s := fmt.Sprintf("#%d %s %s → %d", w.Seq, w.Type, w.object(), w.Status)
	if w.Fault != "" {
		s += " [" + string(w.Fault) + "]"
	}
	if w.Killed {
		s += " [killed]"
	}
	return s
}

func (w Write) object() string {
	switch {
	case w.Namespace != "" && w.Name != "":
		return w.Namespace + "/" + w.Name
	case w.Namespace != "":
		return w.Namespace + "/"
	case w.Name != "":
		return w.Name
	}
	return "-"
}

// mutating reports whether a method changes state.
func mutating(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// backgroundResources are never targeted by default: the leader-election
// Lease, the Event recorder's writes, and the access reviews the preflight
// POSTs (questions, not writes).
var backgroundResources = map[string]bool{
	"leases": true, "events": true, "selfsubjectaccessreviews": true, "subjectaccessreviews": true,
	"selfsubjectrulesreviews": true, "tokenreviews": true,
}

// keyed are the resources whose PATCHes are told apart by the rotation keys
// they touch: the objects a rotation marks.
var keyed = map[string]bool{"nodepools": true, "nodeclaims": true, "nodes": true}

// valued are the keys whose value is part of the write type: short enums
// whose value is the transition (pending, draining, failed, expired), so a
// claim moved to pending and one moved to draining are different writes.
// Every rotation slot's copy of the draining mirror is valued too
// (docs/design.md#throughput).
var valued = map[string]bool{v1alpha1.AnnotationState: true, v1alpha1.AnnotationActiveRotationState: true}

func isValued(key string) bool {
	_, base, slotted := v1alpha1.SlotOf(key)
	return valued[key] || slotted && valued[base]
}

// ours reports whether a label or annotation key is one a rotation writes.
// incidental keys ride along with a write that the other keys identify,
// and appear in it only when their value changes, which depends on earlier
// rotations: the failure write records failure-reason (unchanged when the
// claim failed for the same reason before) and drops an operator's
// rotate-next; the success write appends to recent-rotations (unchanged
// when the record is full of the same figure); a failure's release stamps
// the pool-wide last-failure-at (unchanged when another slot's failure
// stamped it in the same second). A crash campaign that recorded a write
// on one claim must find it again on the next.
var incidental = map[string]bool{
	v1alpha1.AnnotationFailureReason: true, v1alpha1.AnnotationRecentRotations: true, v1alpha1.AnnotationRotateNext: true,
	v1alpha1.AnnotationLastFailureAt: true,
}

// identifying are the keys that name a write's type.
func identifying(keys []string) []string {
	var out []string
	for _, k := range keys {
		name, _, _ := strings.Cut(k[1:], "=")
		if !incidental[name] {
			out = append(out, k)
		}
	}
	return out
}

func ours(key string) bool {
	return strings.HasPrefix(key, v1alpha1.Prefix) || key == v1alpha1.KarpenterDoNotDisrupt
}

// Classify turns a request and its body into a Write (Seq, Time and the
// outcome fields are the proxy's to fill).
func Classify(method string, u *url.URL, contentType string, body []byte) Write {
	w := Write{Verb: method}
	w.Namespace, w.Resource, w.Name, w.Subresource = parsePath(u.Path)
	if method == http.MethodPost && w.Name == "" {
		// two creates in one rotation (the placeholder, the pre-pull Pod)
		// are two objects, as two deletes are
		w.Name = createdName(contentType, body)
	}
	w.DryRun = u.Query().Has("dryRun")
	w.Background = backgroundResources[w.Resource] || w.DryRun
	if method == http.MethodPatch && keyed[w.Resource] && w.Subresource == "" {
		w.Keys = patchKeys(contentType, body)
	}
	w.Type = method + " " + w.Resource
	if w.Subresource != "" {
		w.Type += "/" + w.Subresource
	}
	if keys := identifying(w.Keys); len(keys) > 0 {
		w.Type += " " + strings.Join(keys, " ")
	}
	if w.DryRun {
		w.Type += " (dry run)"
	}
	return w
}

// createdName is the metadata.name of a create body, JSON or protobuf
// (client-go sends built-in kinds as protobuf), "" when it has none or
// does not decode.
func createdName(contentType string, body []byte) string {
	if strings.Contains(contentType, "protobuf") {
		obj, _, err := protobufs.Decode(body, nil, nil)
		if err != nil {
			return ""
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return ""
		}
		return m.GetName()
	}
	if !strings.Contains(contentType, "json") {
		return ""
	}
	var obj struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if json.Unmarshal(body, &obj) != nil {
		return ""
	}
	return obj.Metadata.Name
}

// protobufs decodes the built-in kinds a create may send as protobuf.
var protobufs = protobuf.NewSerializer(kscheme.Scheme, kscheme.Scheme)

// parsePath reads a Kubernetes API path: /api/v1/... or
// /apis/<group>/<version>/..., then namespaces/<ns>/ when namespaced, then
// <resource>[/<name>[/<subresource>]].
func parsePath(path string) (ns, resource, name, sub string) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return "", "", "", ""
	}
	// namespaces/<ns>/<resource>... is a namespaced resource; namespaces or
	// namespaces/<ns> alone is the Namespace object itself.
	if len(parts) >= 3 && parts[0] == "namespaces" {
		ns, parts = parts[1], parts[2:]
	}
	if len(parts) > 0 {
		resource = parts[0]
	}
	if len(parts) > 1 {
		name = parts[1]
	}
	if len(parts) > 2 {
		sub = strings.Join(parts[2:], "/")
	}
	return ns, resource, name, sub
}

// patchKeys are the rotation keys a patch sets (+) or removes (-), and
// +spec.unschedulable / -spec.unschedulable for a cordon or uncordon: a
// JSON merge or strategic merge patch (an object; null removes), or a JSON
// patch (an array of operations). Sorted, so a write type does not depend
// on the encoder's key order.
func patchKeys(contentType string, body []byte) []string {
	var keys []string
	add := func(sign, key, value string) {
		if !ours(key) {
			return
		}
		k := sign + key
		if sign == "+" && isValued(key) {
			k += "=" + value
		}
		keys = append(keys, k)
	}
	if strings.Contains(contentType, "json-patch") {
		var ops []struct {
			Op    string          `json:"op"`
			Path  string          `json:"path"`
			Value json.RawMessage `json:"value"`
		}
		if json.Unmarshal(body, &ops) != nil {
			return nil
		}
		for _, op := range ops {
			sign := "+"
			if op.Op == "remove" {
				sign = "-"
			}
			switch {
			case strings.HasPrefix(op.Path, "/metadata/annotations/"), strings.HasPrefix(op.Path, "/metadata/labels/"):
				seg := op.Path[strings.LastIndex(op.Path, "/")+1:]
				var v string
				_ = json.Unmarshal(op.Value, &v)
				add(sign, unescapePointer(seg), v)
			case op.Path == "/spec/unschedulable":
				var on bool
				_ = json.Unmarshal(op.Value, &on)
				if sign == "+" && !on {
					sign = "-"
				}
				keys = append(keys, sign+"spec.unschedulable")
			}
		}
	} else {
		var p struct {
			Metadata struct {
				Annotations map[string]*string `json:"annotations"`
				Labels      map[string]*string `json:"labels"`
			} `json:"metadata"`
			// spec as raw fields: "unschedulable": null (an uncordon of a
			// field with omitempty) must be told from an absent field
			Spec map[string]json.RawMessage `json:"spec"`
		}
		// A body that does not parse has no keys: its type is verb and
		// resource alone, still counted.
		if json.Unmarshal(body, &p) != nil {
			return nil
		}
		for _, m := range []map[string]*string{p.Metadata.Annotations, p.Metadata.Labels} {
			for k, v := range m {
				if v == nil {
					add("-", k, "")
				} else {
					add("+", k, *v)
				}
			}
		}
		if u, ok := p.Spec["unschedulable"]; ok {
			if string(u) == "true" {
				keys = append(keys, "+spec.unschedulable")
			} else {
				keys = append(keys, "-spec.unschedulable") // false or null
			}
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// unescapePointer decodes one JSON-pointer segment (RFC 6901).
func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
