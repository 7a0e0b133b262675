package apiproxy

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestClassify(t *testing.T) {
	const merge = "application/merge-patch+json"
	cases := []struct {
		name, method, path, ctype, body string
		wantType                        string
		wantNS, wantName                string
		background                      bool
	}{
		{name: "anchor write: set keys, the mirror with its value",
			method: "PATCH", path: "/apis/karpenter.sh/v1/nodepools/general", ctype: merge,
			body:     `{"metadata":{"annotations":{"noderotation.io/active-rotation":"general-a","noderotation.io/active-rotation-state":"pending"},"resourceVersion":"12"}}`,
			wantType: "PATCH nodepools +noderotation.io/active-rotation +noderotation.io/active-rotation-state=pending", wantName: "general"},
		{name: "a second slot's anchor write: its mirror with its value too",
			method: "PATCH", path: "/apis/karpenter.sh/v1/nodepools/general", ctype: merge,
			body:     `{"metadata":{"annotations":{"noderotation.io/slot2.active-rotation":"general-b","noderotation.io/slot2.active-rotation-state":"expired"},"resourceVersion":"12"}}`,
			wantType: "PATCH nodepools +noderotation.io/slot2.active-rotation +noderotation.io/slot2.active-rotation-state=expired", wantName: "general"},
		{name: "anchor release: removals and a stamp, in sorted order",
			method: "PATCH", path: "/apis/karpenter.sh/v1/nodepools/general", ctype: merge,
			body:     `{"metadata":{"annotations":{"noderotation.io/surge-wait":null,"noderotation.io/active-rotation":null,"noderotation.io/last-rotation-at":"2026-01-01T00:00:00Z"}}}`,
			wantType: "PATCH nodepools +noderotation.io/last-rotation-at -noderotation.io/active-rotation -noderotation.io/surge-wait", wantName: "general"},
		{name: "freeze: Karpenter's do-not-disrupt counts, other keys do not",
			method: "PATCH", path: "/api/v1/nodes/n1", ctype: "application/strategic-merge-patch+json",
			body:     `{"metadata":{"labels":{"noderotation.io/surge-for":"c"},"annotations":{"karpenter.sh/do-not-disrupt":"true","noderotation.io/do-not-disrupt-owned":"true","other.io/x":"y"}}}`,
			wantType: "PATCH nodes +karpenter.sh/do-not-disrupt +noderotation.io/do-not-disrupt-owned +noderotation.io/surge-for", wantName: "n1"},
		{name: "cordon", method: "PATCH", path: "/api/v1/nodes/n1", ctype: merge,
			body:     `{"metadata":{"annotations":{"noderotation.io/cordoned":"true"}},"spec":{"unschedulable":true}}`,
			wantType: "PATCH nodes +noderotation.io/cordoned +spec.unschedulable", wantName: "n1"},
		{name: "uncordon: an omitempty false is a null", method: "PATCH", path: "/api/v1/nodes/n1", ctype: merge,
			body:     `{"metadata":{"annotations":{"noderotation.io/cordoned":null}},"spec":{"unschedulable":null}}`,
			wantType: "PATCH nodes -noderotation.io/cordoned -spec.unschedulable", wantName: "n1"},
		{name: "incidental keys do not name the write: a failure write with or without a changed failure-reason",
			method: "PATCH", path: "/apis/karpenter.sh/v1/nodeclaims/general-a", ctype: merge,
			body:     `{"metadata":{"annotations":{"noderotation.io/state":"failed","noderotation.io/failure-reason":"Timeout","noderotation.io/rotate-next":null}}}`,
			wantType: "PATCH nodeclaims +noderotation.io/state=failed", wantName: "general-a"},
		{name: "incidental keys do not name the write: a failure's release, with or without a new last-failure-at",
			method: "PATCH", path: "/apis/karpenter.sh/v1/nodepools/general", ctype: merge,
			body:     `{"metadata":{"annotations":{"noderotation.io/last-failure-at":"2026-01-01T00:00:00Z","noderotation.io/slot2.active-rotation":null,"noderotation.io/slot2.active-rotation-state":null}}}`,
			wantType: "PATCH nodepools -noderotation.io/slot2.active-rotation -noderotation.io/slot2.active-rotation-state", wantName: "general"},
		{name: "incidental keys do not name the write: the release with recent-rotations",
			method: "PATCH", path: "/apis/karpenter.sh/v1/nodepools/general", ctype: merge,
			body:     `{"metadata":{"annotations":{"noderotation.io/active-rotation":null,"noderotation.io/recent-rotations":"15s"}}}`,
			wantType: "PATCH nodepools -noderotation.io/active-rotation", wantName: "general"},
		{name: "claim to draining is not claim to pending", method: "PATCH", path: "/apis/karpenter.sh/v1/nodeclaims/general-a", ctype: merge,
			body:     `{"metadata":{"annotations":{"noderotation.io/state":"draining"}}}`,
			wantType: "PATCH nodeclaims +noderotation.io/state=draining", wantName: "general-a"},
		{name: "JSON patch", method: "PATCH", path: "/apis/karpenter.sh/v1/nodeclaims/general-a", ctype: "application/json-patch+json",
			body:     `[{"op":"add","path":"/metadata/annotations/noderotation.io~1state","value":"failed"},{"op":"remove","path":"/metadata/annotations/noderotation.io~1started-at"}]`,
			wantType: "PATCH nodeclaims +noderotation.io/state=failed -noderotation.io/started-at", wantName: "general-a"},
		{name: "a PATCH of another resource has no keys", method: "PATCH", path: "/api/v1/namespaces/ns/pods/p", ctype: merge,
			body: `{"metadata":{"annotations":{"noderotation.io/state":"x"}}}`, wantType: "PATCH pods", wantNS: "ns", wantName: "p"},
		{name: "placeholder create", method: "POST", path: "/api/v1/namespaces/node-rotation-system/pods", ctype: "application/json",
			body: `{"metadata":{"name":"nrc-surge-a"}}`, wantType: "POST pods", wantNS: "node-rotation-system", wantName: "nrc-surge-a"},
		{name: "a create whose body does not decode names no object", method: "POST", path: "/api/v1/namespaces/node-rotation-system/pods",
			ctype: "application/vnd.kubernetes.protobuf", body: "k8s\x00", wantType: "POST pods", wantNS: "node-rotation-system"},
		{name: "a protobuf create, as client-go sends a Pod", method: "POST", path: "/api/v1/namespaces/node-rotation-system/pods",
			ctype: "application/vnd.kubernetes.protobuf", body: protobufPod("nrc-prepull-a"), wantType: "POST pods", wantNS: "node-rotation-system", wantName: "nrc-prepull-a"},
		{name: "a create with generateName names no object", method: "POST", path: "/api/v1/namespaces/ns/pods", ctype: "application/json",
			body: `{"metadata":{"generateName":"x-"}}`, wantType: "POST pods", wantNS: "ns"},
		{name: "claim delete", method: "DELETE", path: "/apis/karpenter.sh/v1/nodeclaims/general-a",
			wantType: "DELETE nodeclaims", wantName: "general-a"},
		{name: "a subresource", method: "POST", path: "/api/v1/namespaces/ns/pods/p/eviction",
			wantType: "POST pods/eviction", wantNS: "ns", wantName: "p"},
		{name: "a namespace object", method: "DELETE", path: "/api/v1/namespaces/ns", wantType: "DELETE namespaces", wantName: "ns"},
		{name: "events are background", method: "POST", path: "/api/v1/namespaces/default/events",
			wantType: "POST events", wantNS: "default", background: true},
		{name: "the Lease is background", method: "PUT", path: "/apis/coordination.k8s.io/v1/namespaces/nrs/leases/x",
			wantType: "PUT leases", wantNS: "nrs", wantName: "x", background: true},
		{name: "the preflight's access reviews are background", method: "POST", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			wantType: "POST selfsubjectaccessreviews", background: true},
		{name: "a server-side dry run changes nothing", method: "POST", path: "/api/v1/namespaces/nrs/pods?dryRun=All",
			wantType: "POST pods (dry run)", wantNS: "nrs", background: true},
		{name: "an unparsable body is still a write", method: "PATCH", path: "/api/v1/nodes/n1", ctype: merge, body: `{`,
			wantType: "PATCH nodes", wantName: "n1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u, err := url.Parse(c.path)
			if err != nil {
				t.Fatal(err)
			}
			w := Classify(c.method, u, c.ctype, []byte(c.body))
			if w.Type != c.wantType {
				t.Errorf("type %q\nwant %q", w.Type, c.wantType)
			}
			if w.Namespace != c.wantNS || w.Name != c.wantName {
				t.Errorf("object %q/%q, want %q/%q", w.Namespace, w.Name, c.wantNS, c.wantName)
			}
			if w.Background != c.background {
				t.Errorf("background %v, want %v", w.Background, c.background)
			}
		})
	}
}

// The write type does not depend on the encoder's key order.
func TestClassifyIsOrderIndependent(t *testing.T) {
	u := &url.URL{Path: "/api/v1/nodes/n"}
	a := Classify("PATCH", u, "application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"noderotation.io/b":"1","noderotation.io/a":"2"}}}`))
	b := Classify("PATCH", u, "application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"noderotation.io/a":"2","noderotation.io/b":"1"}}}`))
	if a.Type != b.Type || !slices.Equal(a.Keys, []string{"+noderotation.io/a", "+noderotation.io/b"}) {
		t.Errorf("%q vs %q (keys %v)", a.Type, b.Type, a.Keys)
	}
}

// protobufPod is a Pod named name as client-go's protobuf encoding sends it.
func protobufPod(name string) string {
	var b strings.Builder
	pod := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := protobufs.Encode(pod, &b); err != nil {
		panic(err)
	}
	return b.String()
}
