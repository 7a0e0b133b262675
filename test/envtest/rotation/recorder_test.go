package rotation_test

import (
	"context"
	"sort"
	"strconv"
	"sync"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
)

// record is one write the API server made, as a watch saw it.
type record struct {
	rv   int64
	kind string
	typ  watch.EventType
	obj  client.Object
}

// recorder watches NodePools, NodeClaims, Nodes and Pods and orders every
// write by resourceVersion, which etcd makes one total order across all
// resources: "A happened before B" is rv(A) < rv(B).
type recorder struct {
	mu      sync.Mutex
	records []record
	cancel  context.CancelFunc
}

func startRecorder() *recorder {
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{cancel: cancel}
	for kind, list := range map[string]client.ObjectList{
		"NodePool": &karpv1.NodePoolList{}, "NodeClaim": &karpv1.NodeClaimList{},
		"Node": &corev1.NodeList{}, "Pod": &corev1.PodList{},
	} {
		w, err := watcher.Watch(ctx, list)
		Expect(err).NotTo(HaveOccurred())
		go func(kind string, w watch.Interface) {
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(client.Object)
				if !ok {
					continue
				}
				rv, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
				r.mu.Lock()
				r.records = append(r.records, record{rv: rv, kind: kind, typ: ev.Type, obj: obj})
				r.mu.Unlock()
			}
		}(kind, w)
	}
	return r
}

func (r *recorder) stop() { r.cancel() }

// sorted returns the records in resourceVersion order.
func (r *recorder) sorted() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]record(nil), r.records...)
	sort.Slice(out, func(i, j int) bool { return out[i].rv < out[j].rv })
	return out
}

// first returns the resourceVersion of the first record of kind/name that
// satisfies pred, or 0.
func (r *recorder) first(kind, name string, pred func(record) bool) int64 {
	for _, rec := range r.sorted() {
		if rec.kind == kind && rec.obj.GetName() == name && pred(rec) {
			return rec.rv
		}
	}
	return 0
}

func annotated(key string) func(record) bool {
	return func(rec record) bool { _, ok := rec.obj.GetAnnotations()[key]; return ok && rec.typ != watch.Deleted }
}

func annotatedWith(key, value string) func(record) bool {
	return func(rec record) bool { return rec.obj.GetAnnotations()[key] == value && rec.typ != watch.Deleted }
}

func deleting(rec record) bool { return rec.obj.GetDeletionTimestamp() != nil }

func deleted(rec record) bool { return rec.typ == watch.Deleted }
