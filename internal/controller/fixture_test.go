package controller

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/awslabs/operatorpkg/status"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/announce"
	_ "github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/scheme"
	"github.com/noderotation/node-rotation-controller/internal/table"
)

// The fixture: NodePool "general" (workload=api, expireAfter 14d,
// terminationGracePeriod 30m) governed by RotationPolicy "api", open 24/7
// with the defaults: readyTimeout 15m, so by hand P = 1m, t_rot = 47m and
// Lead = 49m — a claim is due once its deadline is less than 49m away.
// The window-missed evaluation is kept quiet by a stamp on the pool.
const (
	ns    = "nrc-system"
	poolE = 14 * 24 * time.Hour
)

// now is a Monday noon in UTC.
var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var everyDay = []v1alpha1.Weekday{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

// loadEngine proves the shipped table once for the package.
var loadEngine = sync.OnceValues(table.Load)

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func alwaysOpen() v1alpha1.RotationPolicySpec {
	return v1alpha1.RotationPolicySpec{
		NodePoolSelector:   metav1.LabelSelector{MatchLabels: map[string]string{"workload": "api"}},
		MaintenanceWindows: []v1alpha1.MaintenanceWindow{{Timezone: "UTC", Days: everyDay, Start: "00:00", End: "24:00"}},
	}
}

func rotationPolicy(name string, spec v1alpha1.RotationPolicySpec) *v1alpha1.RotationPolicy {
	return &v1alpha1.RotationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}, Spec: spec}
}

func governing() *v1alpha1.RotationPolicy { return rotationPolicy("api", alwaysOpen()) }

func nodePool(name string, annotations ...string) *karpv1.NodePool {
	e := poolE
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"workload": "api"},
		Annotations: map[string]string{v1alpha1.AnnotationWindowOpenedAt: "2026-11-30T00:00:00Z"}}}
	np.Spec.Template.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
	np.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 30 * time.Minute}
	for i := 0; i < len(annotations); i += 2 {
		np.Annotations[annotations[i]] = annotations[i+1]
	}
	return np
}

// nodeClaim is a Ready claim of pool general with the pool's expireAfter
// whose deadline is `left` away from now, on node (none when "").
func nodeClaim(name string, left time.Duration, node string, annotations ...string) *karpv1.NodeClaim {
	e := poolE
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{
		Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{karpv1.NodePoolLabelKey: "general"}, Annotations: map[string]string{},
		CreationTimestamp: metav1.NewTime(now.Add(left - e)),
	}}
	c.Spec.ExpireAfter = karpv1.NillableDuration{Duration: &e}
	c.Status.NodeName = node
	c.Status.Conditions = []status.Condition{{Type: "Ready", Status: metav1.ConditionTrue}}
	for i := 0; i < len(annotations); i += 2 {
		c.Annotations[annotations[i]] = annotations[i+1]
	}
	return c
}

func node(name string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{corev1.LabelHostname: "host-" + name, karpv1.NodePoolLabelKey: "general"}}}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	return n
}

func pod(name, node, cpu string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}}
	p.Spec.NodeName = node
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
	p.Status.Phase = corev1.PodRunning
	return p
}

// recorder is client-go's FakeRecorder that also keeps the object each
// Event was recorded on.
type recorder struct {
	*record.FakeRecorder
	mu   sync.Mutex
	objs []runtime.Object
}

func (r *recorder) Event(obj runtime.Object, typ, reason, msg string) {
	r.mu.Lock()
	r.objs = append(r.objs, obj)
	r.mu.Unlock()
	r.FakeRecorder.Event(obj, typ, reason, msg)
}

// drain returns the Events recorded since the last drain.
func (r *recorder) drain() []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

type logLine struct {
	msg string
	kv  map[string]any
}

// capture is a JSON logger at verbosity v whose lines land in lines.
func capture(t *testing.T, v int, lines *[]logLine) logr.Logger {
	var mu sync.Mutex
	return funcr.NewJSON(func(obj string) {
		kv := map[string]any{}
		if err := json.Unmarshal([]byte(obj), &kv); err != nil {
			t.Errorf("log line %s: %v", obj, err)
		}
		msg, _ := kv["msg"].(string)
		mu.Lock()
		*lines = append(*lines, logLine{msg, kv})
		mu.Unlock()
	}, funcr.Options{Verbosity: v})
}

func (w *world) linesWith(msg string) []logLine {
	var out []logLine
	for _, l := range *w.lines {
		if l.msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// newAPI is a fake API server with the spec.nodeName Pod index and the
// RotationPolicy status subresource.
func newAPI(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithStatusSubresource(&v1alpha1.RotationPolicy{}).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Name} })
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

// world is a reconciler wired as Setup wires it, on fake clients, with the
// shipped, proven rules table and a real announcer.
type world struct {
	api       client.WithWatch
	r         *NodePoolReconciler
	rec       *recorder
	lines     *[]logLine
	decisions []engine.Decision
	// now is the expectations' clock (the passes observe at the fixed now)
	now time.Time
}

// newWorld serves cache and API from one fake client.
func newWorld(t *testing.T, funcs *interceptor.Funcs, objs ...client.Object) *world {
	api := newAPI(t, funcs, objs...)
	return wire(t, api, api)
}

// wire builds the reconciler: the observer reads cache; every step reads
// fresh from and writes to api.
func wire(t *testing.T, cache client.Reader, api client.WithWatch) *world {
	t.Helper()
	eng, err := loadEngine()
	if err != nil {
		t.Fatal(err)
	}
	var lines []logLine
	log := capture(t, 1, &lines)
	rec := &recorder{FakeRecorder: record.NewFakeRecorder(100)}
	w := &world{api: api, rec: rec, lines: &lines, now: now}
	w.r = &NodePoolReconciler{
		Client: api, Fresh: api, Engine: eng, Log: log,
		Observer:     &observe.Observer{Cache: cache, API: api, Namespace: ns, Clock: func() time.Time { return now }, Rules: eng},
		Expectations: NewExpectations(func() time.Time { return w.now }),
		Announcer:    announce.New(log, rec),
		Placeholder:  PlaceholderConfig{Namespace: ns, PriorityClass: "nrc-placeholder", Image: "example.com/pause:1"},
		OnDecision:   func(_ string, d engine.Decision) { w.decisions = append(w.decisions, d) },
	}
	return w
}

func (w *world) transitions() []string {
	out := make([]string, len(w.decisions))
	for i, d := range w.decisions {
		out[i] = d.Transition
	}
	return out
}

// get reads an object from the API server.
func get[T client.Object](t *testing.T, c client.Reader, name, namespace string, obj T) T {
	t.Helper()
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return obj
}

// gaugeSeries reads a pool's gauge without creating the series; more
// label name/value pairs narrow it to one series of a wider gauge.
func gaugeSeries(t *testing.T, g *prometheus.GaugeVec, pool string, kv ...string) (float64, bool) {
	t.Helper()
	want := map[string]string{"nodepool": pool}
	for i := 0; i+1 < len(kv); i += 2 {
		want[kv[i]] = kv[i+1]
	}
	ch := make(chan prometheus.Metric, 64)
	go func() { g.Collect(ch); close(ch) }()
	v, found := 0.0, false
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		matched := 0
		for _, l := range d.GetLabel() {
			if w, ok := want[l.GetName()]; ok && w == l.GetValue() {
				matched++
			}
		}
		if matched == len(want) {
			v, found = d.GetGauge().GetValue(), true
		}
	}
	return v, found
}
