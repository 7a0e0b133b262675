// Package claimwatch is the NodeClaim watch the controller's cache runs on:
// the same request as client-go's, with each event decoded in one pass
// straight into a NodeClaim, skipping what the cache would drop anyway
// (docs/performance.md#one-decode-per-event-shared-maps-gogc50).
//
// client-go decodes a watch event of a custom resource, which has only a
// JSON encoding, five times over: the framer scans it, the event is read
// for its apiVersion and kind, unmarshalled into a WatchEvent with the
// object copied out raw, the object is read again for its apiVersion and
// kind, and then unmarshalled into its type, each unmarshal after its own
// validity scan. Every NodeClaim status update Karpenter writes reaches
// the controller that way, and so does every NodeClaim of the cache's
// initial sync; here the stream decoder scans each event once and
// unmarshals it once.
package claimwatch

import (
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	kjson "sigs.k8s.io/json"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Skipped names the fields the decoder leaves out of every NodeClaim. Each
// is one the controller's cache transform drops as well, so what the
// cache holds is the same either way; not decoding them spares the
// allocations (managedFields' raw bytes, the quantities' parsing).
var Skipped = []string{"metadata.managedFields", "spec.resources", "status.capacity", "status.imageID"}

// event is one watch event on the wire. The API server writes the type
// before the object, but a decoder cannot choose the object's Go type by
// it: the object's fields cover both a NodeClaim and the metav1.Status an
// ERROR event carries. The two share only "status", an object in one and
// a string in the other; it is decoded as a NodeClaim's, and an ERROR
// event's string there is the one type mismatch Decode lets pass.
type event struct {
	Type   watch.EventType `json:"type"`
	Object object          `json:"object"`
}

type object struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        meta        `json:"metadata"`
	Spec            spec        `json:"spec"`
	Status          claimStatus `json:"status"`

	// Only in a metav1.Status.
	Message string                `json:"message"`
	Reason  metav1.StatusReason   `json:"reason"`
	Details *metav1.StatusDetails `json:"details"`
	Code    int32                 `json:"code"`
}

// meta is ObjectMeta without managedFields: a field at the outer level
// wins over the embedded struct's field of the same JSON name, so the
// decoder hands managedFields to skip, which keeps none of it.
type meta struct {
	metav1.ObjectMeta
	ManagedFields skip `json:"managedFields"`
}

type spec struct {
	karpv1.NodeClaimSpec
	Resources skip `json:"resources"`
}

type claimStatus struct {
	karpv1.NodeClaimStatus
	Capacity skip `json:"capacity"`
	ImageID  skip `json:"imageID"`
}

// skip takes any JSON value and keeps nothing of it.
type skip struct{}

func (*skip) UnmarshalJSON([]byte) error { return nil }

// decoder reads a watch stream of NodeClaims: a watch.Decoder for
// watch.NewStreamWatcher.
type decoder struct {
	body io.ReadCloser
	dec  kjson.Decoder
}

func newDecoder(body io.ReadCloser) *decoder {
	return &decoder{body: body, dec: kjson.NewDecoderCaseSensitivePreserveInts(body)}
}

// Decode returns the next event: a NodeClaim for ADDED, MODIFIED, DELETED
// and BOOKMARK, a *metav1.Status for ERROR, as client-go's decoder does.
// Like client-go's (runtime.WithoutVersionDecoder), it leaves the
// object's apiVersion and kind empty; the cache's reader sets them. A
// stream that ends mid-event ends the watch quietly (io.ErrUnexpectedEOF),
// as client-go's framer does, so the reflector simply watches again.
func (d *decoder) Decode() (watch.EventType, runtime.Object, error) {
	var ev event
	if err := d.dec.Decode(&ev); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return "", nil, err
		}
		// An error after a whole event was read (the stream's syntax is
		// checked first) is a value of the wrong type; in an ERROR
		// event's Status, the status string is one, and decoding went
		// on past it to the Status's other fields.
		if ev.Type != watch.Error || ev.Object.Kind != "Status" {
			return "", nil, fmt.Errorf("unable to decode watch event: %w", err)
		}
	}
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		// client-go refuses an object without a kind; one of another kind
		// it would hand on as that kind, which a NodeClaim informer
		// cannot store, so it is refused here.
		if ev.Object.Kind != "NodeClaim" {
			return "", nil, fmt.Errorf("unable to decode watch event: a %q object in a NodeClaim watch", ev.Object.Kind)
		}
		return ev.Type, ev.Object.claim(), nil
	case watch.Error:
		return ev.Type, ev.Object.apiStatus(), nil
	default:
		return "", nil, fmt.Errorf("got invalid watch event type: %v", ev.Type)
	}
}

func (d *decoder) Close() { _ = d.body.Close() }

func (o *object) claim() *karpv1.NodeClaim {
	return &karpv1.NodeClaim{ObjectMeta: o.Metadata.ObjectMeta, Spec: o.Spec.NodeClaimSpec, Status: o.Status.NodeClaimStatus}
}

func (o *object) apiStatus() *metav1.Status {
	return &metav1.Status{
		ListMeta: metav1.ListMeta{ResourceVersion: o.Metadata.ResourceVersion},
		// The API server's ERROR events are failures, and the decoder
		// could not keep the string (the event type above).
		Status: metav1.StatusFailure, Message: o.Message, Reason: o.Reason, Details: o.Details, Code: o.Code,
	}
}
