// Package claimwatch is the NodeClaim watch the controller's cache runs on:
// the same request as client-go's, with each event decoded in one pass
// straight off the stream into a NodeClaim, skipping what the cache would
// drop anyway (docs/performance.md#one-decode-per-event-shared-maps-gogc50,
// docs/performance.md#a-decoder-without-a-scan-first).
//
// client-go decodes a watch event of a custom resource, which has only a
// JSON encoding, five times over: the framer scans it, the event is read
// for its apiVersion and kind, unmarshalled into a WatchEvent with the
// object copied out raw, the object is read again for its apiVersion and
// kind, and then unmarshalled into its type, each unmarshal after its own
// validity scan. Every NodeClaim status update Karpenter writes reaches
// the controller that way, and so does every NodeClaim of the cache's
// initial sync. Here json-iterator (the JSON reader Kubernetes' own
// structured-merge-diff links into every client, this binary included)
// reads each event once, as it arrives, and skips managedFields without
// keeping a byte of them.
package claimwatch

import (
	"errors"
	"fmt"
	"io"
	"unsafe"

	jsoniter "github.com/json-iterator/go"
	"github.com/modern-go/reflect2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Skipped names the fields the decoder leaves out of every NodeClaim. Each
// is one the controller's cache transform drops as well, so what the
// cache holds is the same either way; not decoding them spares the
// allocations (managedFields' entries, the quantities' parsing).
var Skipped = []string{"metadata.managedFields", "spec.resources", "status.capacity", "status.imageID"}

// api reads JSON as client-go's decoder does where the API server's output
// can tell: keys match fields case-sensitively (sigs.k8s.io/json), unknown
// keys are ignored. On input the API server never writes it is more
// lenient than encoding/json: invalid UTF-8 is kept rather than replaced,
// control characters in keys pass, and a struct of ten fields or fewer
// matches keys by a 64-bit hash. A skip field is passed over without a
// copy of its bytes (json-iterator still makes a string of each key of an
// object it passes over).
var api = func() jsoniter.API {
	a := jsoniter.Config{CaseSensitive: true}.Froze()
	a.RegisterExtension(jsoniter.DecoderExtension{reflect2.TypeOf(skip{}): skipDecoder{}})
	return a
}()

// claimAPIVersion is the NodeClaims' group and version on the wire.
const claimAPIVersion = "karpenter.sh/v1"

// readBuffer is the decoder's buffer: a NodeClaim event is about 5 KB,
// and a larger buffer means fewer reads of the HTTP/2 body, each a lock.
const readBuffer = 32 << 10

// claimObject is a NodeClaim as the watch carries it, without the Skipped
// fields: a field at the outer level wins over the embedded struct's
// field of the same JSON name, so the decoder hands those to skip.
type claimObject struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        meta        `json:"metadata"`
	Spec            spec        `json:"spec"`
	Status          claimStatus `json:"status"`
}

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

// skipDecoder reads a skip field: the value is passed over in the stream.
// jsoniter's decoder interface hands it the field's address, unused here.
type skipDecoder struct{}

func (skipDecoder) Decode(_ unsafe.Pointer, it *jsoniter.Iterator) { it.Skip() }

// decoder reads a watch stream of NodeClaims: a watch.Decoder for
// watch.NewStreamWatcher.
type decoder struct {
	body io.ReadCloser
	src  *source
	it   *jsoniter.Iterator
}

func newDecoder(body io.ReadCloser) *decoder {
	src := &source{r: body}
	return &decoder{body: body, src: src, it: jsoniter.Parse(api, src, readBuffer)}
}

// source is the body, keeping the error of a read that found nothing
// more: the iterator asks for more only when what it holds ends before
// the value does, and reports a stream that ends mid-event as a syntax
// error. A read that returns the last bytes with io.EOF is not one: the
// iterator reads those, and the next read returns io.EOF alone.
type source struct {
	r   io.Reader
	err error
}

func (s *source) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n == 0 && err != nil {
		s.err = err
	}
	return n, err
}

// Decode returns the next event: a NodeClaim for ADDED, MODIFIED, DELETED
// and BOOKMARK, a *metav1.Status for ERROR, as client-go's decoder does.
// Like client-go's (runtime.WithoutVersionDecoder), it leaves the
// object's apiVersion and kind empty; the cache's reader sets them. A
// stream that ends between events ends the watch (io.EOF); one that ends
// mid-event ends it quietly too (io.ErrUnexpectedEOF), as client-go's
// framer does, so the reflector simply watches again; a read that fails
// otherwise returns that error, for the watcher to tell a dropped
// connection from a failure.
func (d *decoder) Decode() (typ watch.EventType, obj runtime.Object, err error) {
	// encoding/json does not panic on any input; should json-iterator,
	// the watch ends with an error (the reflector watches again) rather
	// than the stream watcher's crash handler ending the controller.
	defer func() {
		if r := recover(); r != nil {
			typ, obj, err = "", nil, fmt.Errorf("unable to decode watch event: %v", r)
		}
	}()
	if d.it.WhatIsNext() == jsoniter.InvalidValue && d.src.err != nil {
		return "", nil, d.src.err // nothing of a next event came
	}
	var objErr error
	var early []byte // the object when it comes before the type
	d.it.ReadObjectCB(func(it *jsoniter.Iterator, field string) bool {
		switch field {
		case "type":
			typ = watch.EventType(it.ReadString())
		case "object":
			if typ == "" {
				early = it.SkipAndReturnBytes()
			} else {
				// A later object wins, as in client-go's decoding.
				early = nil
				obj, objErr = object(it, typ)
			}
		default:
			it.Skip()
		}
		return it.Error == nil
	})
	if d.it.Error != nil {
		return "", nil, d.readError()
	}
	if early != nil {
		it := jsoniter.ParseBytes(api, early)
		if obj, objErr = object(it, typ); it.Error != nil {
			return "", nil, fmt.Errorf("unable to decode watch event: %w", it.Error)
		}
	}
	switch {
	case objErr != nil:
		return "", nil, objErr
	case obj == nil:
		return "", nil, fmt.Errorf("unable to decode watch event: a %s event without an object", typ)
	}
	return typ, obj, nil
}

// readError is why the event could not be read: the body's own error
// when it ended, io.ErrUnexpectedEOF for an end mid-event.
func (d *decoder) readError() error {
	switch {
	case errors.Is(d.src.err, io.EOF):
		return io.ErrUnexpectedEOF
	case d.src.err != nil:
		return d.src.err
	}
	return fmt.Errorf("unable to decode watch event: %w", d.it.Error)
}

// object reads the event's object as its type says: a NodeClaim, or the
// API server's Status of an ERROR event. An error of the iterator's is
// left on it, for Decode to report.
func object(it *jsoniter.Iterator, typ watch.EventType) (runtime.Object, error) {
	switch typ {
	case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
		var o claimObject
		it.ReadVal(&o)
		// client-go refuses an object without a kind or apiVersion; one
		// of another kind it would hand on as that kind, which a
		// NodeClaim informer cannot store, so it is refused here.
		if it.Error == nil && (o.Kind != "NodeClaim" || o.APIVersion != claimAPIVersion) {
			return nil, fmt.Errorf("unable to decode watch event: a %s %q object in a NodeClaim watch", o.APIVersion, o.Kind)
		}
		return &karpv1.NodeClaim{ObjectMeta: o.Metadata.ObjectMeta, Spec: o.Spec.NodeClaimSpec, Status: o.Status.NodeClaimStatus}, nil
	case watch.Error:
		// client-go decodes an ERROR event's object by its kind too; the
		// API server's is a Status.
		s := &metav1.Status{}
		if it.ReadVal(s); it.Error == nil && (s.Kind != "Status" || s.APIVersion != "v1") {
			return nil, fmt.Errorf("unable to decode watch event: a %s %q object in an ERROR event", s.APIVersion, s.Kind)
		}
		s.TypeMeta = metav1.TypeMeta{}
		return s, nil
	}
	it.Skip()
	return nil, fmt.Errorf("got invalid watch event type: %v", typ)
}

func (d *decoder) Close() { _ = d.body.Close() }
