package controller

import (
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/actions"
	"github.com/noderotation/node-rotation-controller/internal/observe"
)

// expectationBound is how long a pass waits for the cache to show this
// instance's own write before it decides on the copy it has, with a log
// line: a watch that never delivers must not stop the pool.
const expectationBound = 10 * time.Second

// Expectations remember, per object, the resourceVersion of the last write
// this instance made to it, so that no pass decides on a cached copy older
// than its own write (docs/design.md#read-your-writes): the expectations
// pattern of Kubernetes' own controllers. A pass that finds one older
// comes back once the cache has caught up, or after expectationBound.
type Expectations struct {
	mu   sync.Mutex
	want map[objectKey]expected
	now  func() time.Time
}

type objectKey struct{ kind, name string }

type expected struct {
	resourceVersion string
	since           time.Time
}

// NewExpectations keeps expectations on the given clock.
func NewExpectations(now func() time.Time) *Expectations {
	return &Expectations{want: map[objectKey]expected{}, now: now}
}

// Wrote records the pass's writes.
func (e *Expectations) Wrote(ws []actions.Written) {
	if e == nil || len(ws) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range ws {
		e.want[objectKey{w.Kind, w.Name}] = expected{resourceVersion: w.ResourceVersion, since: e.now()}
	}
}

// Behind names the first object of the observation whose cached copy is
// older than this instance's last write to it, "" when the cache has
// caught up with every write (those expectations are then forgotten). An
// expectation older than expectationBound is forgotten with a log line.
func (e *Expectations) Behind(obs *observe.Observation, log logr.Logger) string {
	if e == nil {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.want) == 0 {
		return ""
	}
	behind := ""
	for _, o := range observed(obs) {
		k := objectKey{kindOf(o), o.GetName()}
		want, ok := e.want[k]
		if !ok {
			continue
		}
		switch {
		case !older(o.GetResourceVersion(), want.resourceVersion):
			delete(e.want, k)
		case e.now().Sub(want.since) > expectationBound:
			log.Info("the cache has not shown this instance's write; deciding on the copy it has", "object", k.kind+"/"+k.name,
				"written", want.resourceVersion, "cached", o.GetResourceVersion(), "waited", expectationBound)
			delete(e.want, k)
		case behind == "":
			behind = k.kind + "/" + k.name
		}
	}
	for k, w := range e.want {
		if e.now().Sub(w.since) > forgetAfter {
			delete(e.want, k) // not observed since: deleted, or another pool's
		}
	}
	return behind
}

// forgetAfter drops an expectation no pass has checked for this long: its
// object was deleted (a claim, a node), or it left the pools observed.
const forgetAfter = 5 * expectationBound

// observed lists the objects a pass decides on that this controller
// writes: the pool, its claims, the nodes around the rotation.
func observed(obs *observe.Observation) []client.Object {
	out := []client.Object{obs.Pool}
	for i := range obs.Claims {
		out = append(out, &obs.Claims[i])
	}
	for _, n := range obs.Stranded.Nodes {
		out = append(out, n)
	}
	if obs.OldNode != nil {
		out = append(out, obs.OldNode)
	}
	if obs.SurgeHost != nil {
		out = append(out, obs.SurgeHost)
	}
	return out
}

func kindOf(o client.Object) string {
	switch o.(type) {
	case *karpv1.NodePool:
		return "NodePool"
	case *karpv1.NodeClaim:
		return "NodeClaim"
	case *corev1.Node:
		return "Node"
	}
	return ""
}

// older reports a cached resourceVersion before the written one.
// Kubernetes calls resourceVersions opaque, but the API servers this runs
// against serve etcd's revisions, integers that grow with every write, so
// they are compared as numbers; one that is not a number cannot be ordered
// and never holds a pass back.
func older(cached, written string) bool {
	c, errC := strconv.ParseUint(cached, 10, 64)
	w, errW := strconv.ParseUint(written, 10, 64)
	if errC != nil || errW != nil {
		return false
	}
	return c < w
}
