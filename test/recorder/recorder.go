// Package recorder watches NodePools, NodeClaims, Nodes and Pods and orders
// every write by resourceVersion, which etcd makes one total order across
// all resources: "A happened before B" is rv(A) < rv(B). Tests use it to
// assert the order of the controller's writes, and what Karpenter did.
package recorder

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// Record is one write the API server made, as a watch saw it.
type Record struct {
	RV   int64
	Kind string
	Type watch.EventType
	Obj  client.Object
	Seen time.Time // when the watch delivered it (wall clock)
}

// Recorder collects Records.
type Recorder struct {
	mu      sync.Mutex
	records []Record
	cancel  context.CancelFunc
}

// Start watches the four kinds from now on; each watch first delivers the
// objects that exist as Added records.
func Start(c client.WithWatch) (*Recorder, error) {
	return start(c, false)
}

// StartAtNow watches the four kinds from their current resourceVersion:
// only writes made from now on, without an Added record for every object
// that exists. On a large cluster those would take seconds to deliver and
// delay — and so misdate — the records of the writes that follow.
func StartAtNow(c client.WithWatch) (*Recorder, error) {
	return start(c, true)
}

func start(c client.WithWatch, atNow bool) (*Recorder, error) {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Recorder{cancel: cancel}
	for kind, list := range map[string]client.ObjectList{
		"NodePool": &karpv1.NodePoolList{}, "NodeClaim": &karpv1.NodeClaimList{},
		"Node": &corev1.NodeList{}, "Pod": &corev1.PodList{},
	} {
		var opts []client.ListOption
		if atNow {
			if err := c.List(ctx, list, client.Limit(1)); err != nil {
				cancel()
				return nil, fmt.Errorf("listing %ss: %w", kind, err)
			}
			opts = append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
		}
		w, err := c.Watch(ctx, list, opts...)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("watching %ss: %w", kind, err)
		}
		go r.collect(kind, w)
	}
	return r, nil
}

func (r *Recorder) collect(kind string, w watch.Interface) {
	for ev := range w.ResultChan() {
		obj, ok := ev.Object.(client.Object)
		if !ok {
			continue
		}
		rv, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
		r.mu.Lock()
		r.records = append(r.records, Record{RV: rv, Kind: kind, Type: ev.Type, Obj: obj, Seen: time.Now()})
		r.mu.Unlock()
	}
}

// Of returns a Recorder holding records, for testing what reads records
// (its Stop does nothing).
func Of(records ...Record) *Recorder {
	return &Recorder{records: append([]Record(nil), records...), cancel: func() {}}
}

// Stop ends the watches.
func (r *Recorder) Stop() { r.cancel() }

// Sorted returns the records in resourceVersion order.
func (r *Recorder) Sorted() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]Record(nil), r.records...)
	sort.Slice(out, func(i, j int) bool { return out[i].RV < out[j].RV })
	return out
}

// First returns the first record of kind/name that satisfies pred.
func (r *Recorder) First(kind, name string, pred func(Record) bool) (Record, bool) {
	for _, rec := range r.Sorted() {
		if rec.Kind == kind && rec.Obj.GetName() == name && pred(rec) {
			return rec, true
		}
	}
	return Record{}, false
}

// FirstRV is First's resourceVersion, or 0.
func (r *Recorder) FirstRV(kind, name string, pred func(Record) bool) int64 {
	rec, _ := r.First(kind, name, pred)
	return rec.RV
}

// Annotated: the object carries key.
func Annotated(key string) func(Record) bool {
	return func(rec Record) bool { _, ok := rec.Obj.GetAnnotations()[key]; return ok && rec.Type != watch.Deleted }
}

// AnnotatedWith: the object carries key=value.
func AnnotatedWith(key, value string) func(Record) bool {
	return func(rec Record) bool { return rec.Obj.GetAnnotations()[key] == value && rec.Type != watch.Deleted }
}

// Labelled: the object carries label key=value.
func Labelled(key, value string) func(Record) bool {
	return func(rec Record) bool { return rec.Obj.GetLabels()[key] == value && rec.Type != watch.Deleted }
}

// Deleting: the object has a deletionTimestamp.
func Deleting(rec Record) bool { return rec.Obj.GetDeletionTimestamp() != nil }

// Deleted: the object is gone.
func Deleted(rec Record) bool { return rec.Type == watch.Deleted }

// Added: the object was created.
func Added(rec Record) bool { return rec.Type == watch.Added }
