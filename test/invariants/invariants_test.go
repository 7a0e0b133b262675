package invariants

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/scheme"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

const (
	pool = "chaos-pool"
	ns   = "node-rotation-system"
	app  = "web-ns"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// world is one run's end state: objects in the cluster, log lines per
// process run, and the watch record. Each test breaks one thing.
type world struct {
	objs      []client.Object
	logs      [][]string // JSON lines per process run
	records   []recorder.Record
	originals []string
	attempts  int
	created   int
	ends      int // interrupted rotation ends
	// interrupted failure writes
	interruptedFailures int
	workloads           []Workload
}

func completeLine(claim string) string {
	return fmt.Sprintf(`{"level":"info","ts":"2026-05-01T12:00:00Z","logger":"rotation","msg":"rotation complete","nodepool":%q,"rotation":%q,"outcome":"success","mode":"surge"}`, pool, claim)
}

func failedLine(claim, retry string) string {
	return fmt.Sprintf(`{"level":"info","msg":"rotation attempt failed","nodepool":%q,"rotation":%q,"reason":"Timeout","retryCount":%q}`, pool, claim, retry)
}

func claim(name, state string) *karpv1.NodeClaim {
	c := &karpv1.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: pool}}}
	if state != "" {
		c.Annotations = map[string]string{v1alpha1.AnnotationState: state}
	}
	return c
}

func failedClaim(name, retry string) *karpv1.NodeClaim {
	c := claim(name, v1alpha1.StateFailed)
	c.Annotations[v1alpha1.AnnotationRetryCount] = retry
	return c
}

func node(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{karpv1.NodePoolLabelKey: pool}, Annotations: map[string]string{}}}
}

func pod(name string, ready bool, phase corev1.PodPhase) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: app, Labels: map[string]string{"app": "web"}}}
	p.Status.Phase = phase
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	return p
}

func rec(rv int64, typ watch.EventType, obj client.Object, seen time.Duration) recorder.Record {
	kind := map[string]string{"*v1.Pod": "Pod", "*v1.NodePool": "NodePool", "*v1.NodeClaim": "NodeClaim", "*v1.Node": "Node"}[fmt.Sprintf("%T", obj)]
	return recorder.Record{RV: rv, Kind: kind, Type: typ, Obj: obj, Seen: t0.Add(seen)}
}

func anchoredPool(claim string) *karpv1.NodePool {
	return &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool, Annotations: map[string]string{v1alpha1.AnnotationActiveRotation: claim}}}
}

// clean: chaos-pool-a rotated away (announced once, by line and Event),
// chaos-pool-b failed once and waits for its retry, the surge node
// chaos-pool-s unmarked; the workload lost one Pod to the drain and got it
// back in 3 s.
func clean() *world {
	np := &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool, Annotations: map[string]string{v1alpha1.AnnotationLastRotationAt: t0.Format(time.RFC3339)}}}
	terminating := pod("web-1", true, corev1.PodRunning)
	terminating.DeletionTimestamp = &metav1.Time{Time: t0}
	return &world{
		objs: []client.Object{
			np, failedClaim("chaos-pool-b", "1"), claim("chaos-pool-s", ""), node("node-b"), node("node-s"),
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "node-rotation-controller-0", Namespace: ns}},
			&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "default"}, Reason: "RotationCompleted", Count: 1,
				InvolvedObject: corev1.ObjectReference{Kind: "NodePool", Name: pool}, Message: "old NodeClaim chaos-pool-a finalized; surgePath provisioned"},
			&corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e2", Namespace: "default"}, Reason: "RotationFailed", Count: 1,
				InvolvedObject: corev1.ObjectReference{Kind: "NodeClaim", Name: "chaos-pool-b"}, Message: "the surge was not ready within readyTimeout 20s; rolled back (retry 1, backoff until 2026-05-01T13:00:00Z)"},
		},
		logs: [][]string{{`not json: starting`, failedLine("chaos-pool-b", "1")}, {completeLine("chaos-pool-a")}},
		records: []recorder.Record{
			rec(1, watch.Added, pod("web-0", true, corev1.PodRunning), 0),
			rec(2, watch.Added, pod("web-1", true, corev1.PodRunning), 0),
			rec(3, watch.Added, pod("web-2", true, corev1.PodRunning), 0),
			rec(4, watch.Added, claim("chaos-pool-b", ""), 0),
			rec(9, watch.Modified, failedClaim("chaos-pool-b", "1"), time.Second),
			rec(10, watch.Modified, anchoredPool("chaos-pool-a"), time.Second),
			rec(11, watch.Modified, terminating, 2*time.Second),
			rec(12, watch.Added, pod("web-3", false, corev1.PodPending), 2*time.Second),
			rec(13, watch.Deleted, terminating, 3*time.Second),
			rec(14, watch.Modified, pod("web-3", true, corev1.PodRunning), 5*time.Second),
			rec(15, watch.Modified, np, 6*time.Second),
		},
		originals: []string{"chaos-pool-a"},
		attempts:  2, created: 1,
		workloads: []Workload{{Namespace: app, Selector: map[string]string{"app": "web"}, MinHealthy: 2, MaxPending: 10 * time.Second}},
	}
}

func (w *world) check(t *testing.T) *Report {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(w.objs...).Build()
	dir := t.TempDir()
	var logs []string
	for i, lines := range w.logs {
		p := filepath.Join(dir, fmt.Sprintf("run-%d.log", i))
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		logs = append(logs, p)
	}
	r, err := Check(context.Background(), Input{
		Client: c, Pools: []string{pool}, Namespace: ns, Originals: w.originals, Attempts: w.attempts, Created: w.created,
		Logs: logs, InterruptedEnds: w.ends, InterruptedFailures: w.interruptedFailures, Records: recorder.Of(w.records...), SinceRV: 5, Workloads: w.workloads,
		Now: t0.Add(time.Minute),
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (w *world) find(name string, rv int64) *recorder.Record {
	for i := range w.records {
		if w.records[i].Obj.GetName() == name && w.records[i].RV == rv {
			return &w.records[i]
		}
	}
	panic(fmt.Sprintf("no record of %s at %d", name, rv))
}

func (w *world) replace(name string, obj client.Object) {
	for i, o := range w.objs {
		if o.GetName() == name && fmt.Sprintf("%T", o) == fmt.Sprintf("%T", obj) {
			w.objs[i] = obj
			return
		}
	}
	w.objs = append(w.objs, obj)
}

func TestCleanRunHasNoViolations(t *testing.T) {
	r := clean().check(t)
	if len(r.Violations) != 0 || len(r.Lost) != 0 {
		t.Fatalf("clean run:\n%s", r)
	}
	if r.Completions != 1 || r.Checks < 15 {
		t.Errorf("completions %d, checks %d", r.Completions, r.Checks)
	}
	if got := r.Summary(); got != fmt.Sprintf("invariants: %d checks, 0 violations, 0 announcements lost to kills", r.Checks) {
		t.Errorf("summary %q", got)
	}
}

// Each broken invariant is reported, by name and object, and nothing else.
func TestEachViolationIsDetected(t *testing.T) {
	cases := []struct {
		name      string
		breakIt   func(w *world)
		invariant string
		object    string
	}{
		{"the pool still anchors a rotation", func(w *world) {
			w.replace(pool, anchoredPool("chaos-pool-b"))
		}, InFlight, "NodePool/" + pool},
		{"a rotation-scoped key without an anchor", func(w *world) {
			w.replace(pool, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool, Annotations: map[string]string{v1alpha1.AnnotationSurgeWait: "10s"}}})
		}, PoolKeyLeft, "NodePool/" + pool},
		{"the draining mirror without an anchor", func(w *world) {
			w.replace(pool, &karpv1.NodePool{ObjectMeta: metav1.ObjectMeta{Name: pool, Annotations: map[string]string{v1alpha1.AnnotationActiveRotationState: "draining"}}})
		}, PoolKeyLeft, "NodePool/" + pool},
		{"a placeholder Pod left", func(w *world) {
			w.objs = append(w.objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-chaos-pool-b", Namespace: ns,
				Labels: map[string]string{v1alpha1.LabelSurgeFor: "chaos-pool-b", v1alpha1.LabelNodePool: pool}}})
		}, PlaceholderLeft, "Pod/" + ns + "/nrc-surge-chaos-pool-b"},
		{"a placeholder Pod that lost its labels", func(w *world) {
			w.objs = append(w.objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-chaos-pool-b", Namespace: ns}})
		}, PlaceholderLeft, "Pod/" + ns + "/nrc-surge-chaos-pool-b"},
		{"a pre-pull Pod left in the controller's namespace", func(w *world) {
			w.objs = append(w.objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-prepull-chaos-pool-b", Namespace: ns,
				Labels: map[string]string{v1alpha1.LabelPrePullFor: "chaos-pool-b", v1alpha1.LabelNodePool: pool}}})
		}, PrePullLeft, "Pod/" + ns + "/nrc-prepull-chaos-pool-b"},
		{"a pre-pull Pod left in a moving Pod's namespace", func(w *world) {
			w.objs = append(w.objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-prepull-chaos-pool-b", Namespace: "shop",
				Labels: map[string]string{v1alpha1.LabelPrePullFor: "chaos-pool-b", v1alpha1.LabelNodePool: pool}}})
		}, PrePullLeft, "Pod/shop/nrc-prepull-chaos-pool-b"},
		{"a pre-pull Pod that lost its pool label", func(w *world) {
			w.objs = append(w.objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-prepull-chaos-pool-b", Namespace: "shop",
				Labels: map[string]string{v1alpha1.LabelPrePullFor: "chaos-pool-b"}}})
		}, PrePullLeft, "Pod/shop/nrc-prepull-chaos-pool-b"},
		{"a node paired with a rotation", func(w *world) {
			n := node("node-s")
			n.Labels[v1alpha1.LabelSurgeFor] = "chaos-pool-a"
			w.replace("node-s", n)
		}, NodeMarked, "Node/node-s"},
		{"our do-not-disrupt left", func(w *world) {
			n := node("node-b")
			n.Annotations[v1alpha1.KarpenterDoNotDisrupt] = "true"
			n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned] = "true"
			w.replace("node-b", n)
		}, NodeMarked, "Node/node-b"},
		{"a do-not-disrupt whose owner marker was lost", func(w *world) {
			n := node("node-b")
			n.Annotations[v1alpha1.KarpenterDoNotDisrupt] = "true"
			w.replace("node-b", n)
		}, NodeMarked, "Node/node-b"},
		{"our cordon left", func(w *world) {
			n := node("node-b")
			n.Annotations[v1alpha1.AnnotationCordoned] = "true"
			n.Spec.Unschedulable = true
			w.replace("node-b", n)
		}, NodeMarked, "Node/node-b"},
		{"a cordon whose marker was lost", func(w *world) {
			n := node("node-b")
			n.Spec.Unschedulable = true
			w.replace("node-b", n)
		}, NodeMarked, "Node/node-b"},
		{"a claim left pending", func(w *world) {
			w.replace("chaos-pool-s", claim("chaos-pool-s", v1alpha1.StatePending))
		}, ClaimInFlight, "NodeClaim/chaos-pool-s"},
		{"a claim left draining", func(w *world) {
			w.replace("chaos-pool-s", claim("chaos-pool-s", v1alpha1.StateDraining))
		}, ClaimInFlight, "NodeClaim/chaos-pool-s"},
		{"an original claim not rotated", func(w *world) {
			w.originals = append(w.originals, "chaos-pool-b")
		}, NotRotated, "NodeClaim/chaos-pool-b"},
		{"more NodeClaims than attempts", func(w *world) {
			w.created = 3
		}, ExtraNodeClaims, "NodePools/" + pool},
		{"a completion logged twice by one process", func(w *world) {
			w.logs[1] = append(w.logs[1], completeLine("chaos-pool-a"))
		}, AnnouncedTwice, "NodeClaim/chaos-pool-a"},
		{"a completion logged by two processes", func(w *world) {
			w.logs[0] = append(w.logs[0], completeLine("chaos-pool-a"))
		}, AnnouncedTwice, "NodeClaim/chaos-pool-a"},
		{"a failure logged twice", func(w *world) {
			w.logs[1] = append(w.logs[1], failedLine("chaos-pool-b", "1"))
		}, AnnouncedTwice, "NodeClaim/chaos-pool-b"},
		{"a completion Event counted twice", func(w *world) {
			w.objs[6].(*corev1.Event).Count = 2
		}, AnnouncedTwice, "NodeClaim/chaos-pool-a"},
		{"a completion Event recorded by a second process", func(w *world) {
			e := w.objs[6].(*corev1.Event).DeepCopy()
			e.Name = "e3"
			w.objs = append(w.objs, e)
		}, AnnouncedTwice, "NodeClaim/chaos-pool-a"},
		{"a failure Event recorded twice", func(w *world) {
			w.objs[7].(*corev1.Event).Count = 2
		}, AnnouncedTwice, "NodeClaim/chaos-pool-b"},
		{"a failure never announced, no write interrupted", func(w *world) {
			// its second failure: no line says retry 2
			w.records = append(w.records, rec(16, watch.Modified, failedClaim("chaos-pool-b", "2"), 7*time.Second))
		}, NeverAnnounced, "NodeClaim/chaos-pool-b"},
		{"a completion never announced, no write interrupted", func(w *world) {
			w.logs[1] = nil
		}, NeverAnnounced, "NodeClaim/chaos-pool-a"},
		{"a rotation the record saw end, never announced", func(w *world) {
			w.records = append(w.records, rec(16, watch.Modified, anchoredPool("chaos-pool-gone"), 7*time.Second))
		}, NeverAnnounced, "NodeClaim/chaos-pool-gone"},
		{"the PDB's floor broken", func(w *world) {
			second := pod("web-2", true, corev1.PodRunning)
			second.DeletionTimestamp = &metav1.Time{Time: t0}
			// web-1 terminating at 11, web-2 at 12: one healthy until web-3 is Ready at 14
			w.records = append(w.records, rec(12, watch.Modified, second, 2*time.Second))
		}, BelowMinHealthy, "Workload/" + app + "/app=web"},
		{"a Pod pending longer than the bound", func(w *world) {
			w.find("web-3", 14).Seen = t0.Add(20 * time.Second) // web-3 ran 18 s after it was created
		}, PendingTooLong, "Workload/" + app + "/app=web"},
		{"a Pod still pending at the end", func(w *world) {
			w.records = append(w.records, rec(16, watch.Added, pod("web-4", false, corev1.PodPending), 10*time.Second))
		}, PendingTooLong, "Workload/" + app + "/app=web"},
		{"a log that cannot be read", func(w *world) {
			w.logs = append(w.logs, nil) // replaced by a missing path below
		}, LogUnreadable, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := clean()
			c.breakIt(w)
			var r *Report
			if c.invariant == LogUnreadable {
				r = w.checkWithMissingLog(t)
			} else {
				r = w.check(t)
			}
			if len(r.Violations) == 0 {
				t.Fatalf("not detected:\n%s", r)
			}
			for _, v := range r.Violations {
				if v.Invariant != c.invariant || (c.object != "" && v.Object != c.object) {
					t.Errorf("violation %s, want only %s on %s", v, c.invariant, c.object)
				}
			}
		})
	}
}

func (w *world) checkWithMissingLog(t *testing.T) *Report {
	t.Helper()
	w.logs = w.logs[:len(w.logs)-1]
	s, _ := scheme.New()
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(w.objs...).Build()
	dir := t.TempDir()
	var logs []string
	for i, lines := range w.logs {
		p := filepath.Join(dir, fmt.Sprintf("run-%d.log", i))
		_ = os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644)
		logs = append(logs, p)
	}
	r, err := Check(context.Background(), Input{Client: c, Pools: []string{pool}, Namespace: ns, Originals: w.originals,
		Attempts: w.attempts, Created: w.created, Logs: append(logs, filepath.Join(dir, "missing.log"))})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A completion lost to an interrupted release is counted, not a violation;
// one more loss than interrupted releases is.
func TestLostCompletionsAreCountedAgainstInterruptedEnds(t *testing.T) {
	w := clean()
	w.logs[1] = nil
	w.objs = w.objs[:6] // the Event was lost with the line
	w.ends = 1
	r := w.check(t)
	if len(r.Violations) != 0 || len(r.Lost) != 1 || r.Lost[0] != "completion of chaos-pool-a" {
		t.Fatalf("one interrupted release, one lost completion:\n%s", r)
	}
	if !strings.HasSuffix(r.Summary(), "0 violations, 1 announcements lost to kills") {
		t.Errorf("summary %q", r.Summary())
	}
	w.records = append(w.records, rec(16, watch.Modified, anchoredPool("chaos-pool-gone"), 7*time.Second))
	r = w.check(t)
	if len(r.Violations) != 1 || r.Violations[0].Invariant != NeverAnnounced || len(r.Lost) != 1 {
		t.Fatalf("two lost, one interrupted release:\n%s", r)
	}
}

// A failure lost to an interrupted failure write is counted; one the
// startup sweep announced (no retry count) is not lost.
func TestLostFailures(t *testing.T) {
	w := clean()
	w.logs[0] = w.logs[0][:1]
	w.objs = append(w.objs[:7], w.objs[8:]...) // and its Event
	r := w.check(t)
	if len(r.Violations) != 1 || r.Violations[0].Invariant != NeverAnnounced {
		t.Fatalf("a failure never announced:\n%s", r)
	}
	w.interruptedFailures = 1
	if r = w.check(t); len(r.Violations) != 0 || len(r.Lost) != 1 || r.Lost[0] != "failure of chaos-pool-b (retry 1)" {
		t.Fatalf("one interrupted failure write:\n%s", r)
	}
	w.interruptedFailures = 0
	// the sweep's line names the claim, not its pool (internal/announce SweptClaim)
	w.logs[0] = append(w.logs[0], `{"msg":"rotation attempt failed","logger":"rotation","reason":"startupSweep","nodeclaim":"chaos-pool-b","from":"pending"}`)
	if r = w.check(t); len(r.Violations) != 0 || len(r.Lost) != 0 {
		t.Fatalf("a swept failure:\n%s", r)
	}
	// another pool's swept claim says nothing about this one's
	w.logs[0][len(w.logs[0])-1] = strings.Replace(w.logs[0][len(w.logs[0])-1], "chaos-pool-b", "other-b", 1)
	if r = w.check(t); len(r.Violations) != 1 {
		t.Fatalf("another pool's swept claim counted:\n%s", r)
	}
}

// Nodes of a pool not under test are not judged.
func TestOtherPoolsAreIgnored(t *testing.T) {
	w := clean()
	n := node("elsewhere")
	n.Labels[karpv1.NodePoolLabelKey] = "other"
	n.Labels[v1alpha1.LabelSurgeFor] = "x"
	other := claim("other-a", v1alpha1.StatePending)
	other.Labels[karpv1.NodePoolLabelKey] = "other"
	w.objs = append(w.objs, n, other, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-surge-other-a", Namespace: ns,
		Labels: map[string]string{v1alpha1.LabelSurgeFor: "other-a", v1alpha1.LabelNodePool: "other"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nrc-prepull-other-a", Namespace: "shop",
			Labels: map[string]string{v1alpha1.LabelPrePullFor: "other-a", v1alpha1.LabelNodePool: "other"}}})
	w.logs[0] = append(w.logs[0], strings.Replace(completeLine("chaos-pool-a"), pool, "other", 1))
	if r := w.check(t); len(r.Violations) != 0 {
		t.Fatalf("another pool's state judged:\n%s", r)
	}
}

func TestAttemptsAndCreatedFromTheRecord(t *testing.T) {
	started := func(name, at string, rv int64) recorder.Record {
		c := claim(name, v1alpha1.StatePending)
		c.Annotations[v1alpha1.AnnotationStartedAt] = at
		return rec(rv, watch.Modified, c, 0)
	}
	other := claim("other-x", "")
	other.Labels[karpv1.NodePoolLabelKey] = "other"
	r := recorder.Of(
		started("chaos-pool-old", "t0", 1),                                 // before sinceRV
		started("chaos-pool-a", "t1", 6), started("chaos-pool-a", "t1", 7), // one attempt, written twice
		rec(8, watch.Added, claim("chaos-pool-s1", ""), 0),
		started("chaos-pool-a", "t2", 9), // its retry
		started("chaos-pool-b", "t3", 10),
		rec(11, watch.Added, claim("chaos-pool-s2", ""), 0),
		rec(12, watch.Added, other, 0),
	)
	if n := Attempts(r, []string{pool}, 5); n != 3 {
		t.Errorf("attempts %d, want 3", n)
	}
	if got := Started(r, []string{pool}, 5); fmt.Sprint(got) != "[chaos-pool-a chaos-pool-b]" {
		t.Errorf("started %v, want [chaos-pool-a chaos-pool-b]", got)
	}
	if n := Created(r, []string{pool}, 5); n != 2 {
		t.Errorf("created %d, want 2", n)
	}
	if got := Anchored(recorder.Of(rec(4, watch.Modified, anchoredPool("x"), 0), rec(6, watch.Modified, anchoredPool("y"), 0),
		rec(7, watch.Modified, anchoredPool("y"), 0)), []string{pool}, 5); fmt.Sprint(got) != "[y]" {
		t.Errorf("anchored %v", got)
	}
}
