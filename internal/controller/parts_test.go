package controller

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/internal/announce"
	"github.com/noderotation/node-rotation-controller/internal/census"
	"github.com/noderotation/node-rotation-controller/internal/metrics"
	"github.com/noderotation/node-rotation-controller/internal/observe"
	"github.com/noderotation/node-rotation-controller/internal/policy"
	"github.com/noderotation/node-rotation-controller/internal/prepull"
	"github.com/noderotation/node-rotation-controller/internal/schedule"
	"github.com/noderotation/node-rotation-controller/internal/surge"
)

// governedObservation is a governed pool's observation with the fixture's
// settings and derivation (Lead 49m, K = 2).
func governedObservation(t *testing.T) *observe.Observation {
	t.Helper()
	s, err := policy.Resolve(alwaysOpen())
	if err != nil {
		t.Fatal(err)
	}
	pool := nodePool("general")
	_, d := s.Derive(pool, now)
	return &observe.Observation{
		Now: now, Pool: pool, Settings: s, Derivation: d, WindowOpen: true,
		Governance: policy.Governance{Policy: governing()},
	}
}

// drainSnapshot is an anchored rotation draining since deletedAt, with the
// fixture's drain bound tGP + buffer = 32m.
func drainSnapshot(deletedAt time.Time) *engine.Snapshot {
	return &engine.Snapshot{
		Now:    now,
		Pool:   engine.PoolObservation{Governance: "governed", Feasible: true, WindowOpen: true, Anchor: "general-a", RotationState: "draining", WindowOpenedAt: stamp(now)},
		Policy: engine.PolicyObservation{ReadyTimeout: engine.Duration(15 * time.Minute), CooldownAfter: engine.Duration(10 * time.Minute), FailurePause: engine.Duration(10 * time.Minute), DrainBound: engine.Duration(32 * time.Minute)},
		Claim:  engine.ClaimObservation{Exists: true, State: "draining", Deleting: true, DeletedAt: deletedAt},
		Surge:  engine.SurgeObservation{Headroom: true},
	}
}

// drainStuck is the rotation machine's own fact, as it decided.
func TestDrainStuckComesFromTheDecision(t *testing.T) {
	eng, err := loadEngine()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		deletedAt  time.Time
		transition string
		want       bool
	}{
		{now.Add(-time.Hour), "draining.stuck", true},        // 1h > 32m
		{now.Add(-10 * time.Minute), "draining.wait", false}, // 10m ≤ 32m
		{now.Add(-32 * time.Minute), "draining.wait", false}, // exactly the bound: not stuck
		{now.Add(-33 * time.Minute), "draining.stuck", true}, // past it
	} {
		ds := eng.Decide(drainSnapshot(c.deletedAt))
		if ds[0].Transition != c.transition || drainStuck(ds) != c.want {
			t.Errorf("deleting since %s: %s, drainStuck %v; want %s, %v", now.Sub(c.deletedAt), ds[0].Transition, drainStuck(ds), c.transition, c.want)
		}
	}
	fact := []engine.FactValue{{Name: "drainStuck", Value: true}}
	for _, c := range []struct {
		name string
		ds   []engine.Decision
	}{
		{"nothing decided", nil},
		{"not draining", []engine.Decision{{Machine: "rotation", From: "pending", Facts: fact}}},
		{"another machine", []engine.Decision{{Machine: "window", From: "draining", Facts: fact}}},
		{"draining without the fact", []engine.Decision{{Machine: "rotation", From: "draining"}}},
	} {
		if drainStuck(c.ds) {
			t.Errorf("%s: drainStuck true", c.name)
		}
	}
}

// gauges shows the pass's governance, census and drain facts.
func TestGauges(t *testing.T) {
	obs := governedObservation(t)
	freeze := now.Add(time.Hour)
	obs.Pool.Annotations[v1alpha1.AnnotationFreeze] = stamp(freeze)
	obs.Census = census.Result{Census: census.Census{Total: 9, Candidates: 2, InBackoff: 3, ShortLead: 1, MaxRetry: 4, NotDue: 3}}
	obs.Snapshot = engine.Snapshot{Pool: engine.PoolObservation{Governance: "governed", Anchor: "general-a"}}
	obs.Pool.Annotations[v1alpha1.AnnotationActiveRotation] = "general-a"
	obs.Pool.Annotations[v1alpha1.Slot(3).Key(v1alpha1.AnnotationActiveRotation)] = "general-c" // two rotations in flight
	stuck := []engine.Decision{{Machine: "rotation", From: "draining", Facts: []engine.FactValue{{Name: "drainStuck", Value: true}}}}
	want := metrics.Pool{Name: "general", Governance: "governed", Candidates: 2, InBackoff: 3, ShortLead: 1, MaxRetry: 4,
		InFlight: 2, WindowOpen: true, FreezeUntil: freeze, DrainStuck: true, Derivation: obs.Derivation}
	if got := gauges(obs, stuck); !reflect.DeepEqual(got, want) {
		t.Errorf("gauges\n got %+v\nwant %+v", got, want)
	}
	// A freeze in the past, or malformed, is no freeze; no anchor, no flight.
	for _, v := range []string{stamp(now.Add(-time.Minute)), stamp(now), "soon"} {
		obs.Pool.Annotations[v1alpha1.AnnotationFreeze] = v
		obs.Snapshot.Pool.Anchor = ""
		delete(obs.Pool.Annotations, v1alpha1.AnnotationActiveRotation)
		delete(obs.Pool.Annotations, v1alpha1.Slot(3).Key(v1alpha1.AnnotationActiveRotation))
		got := gauges(obs, nil)
		if !got.FreezeUntil.IsZero() || got.InFlight != 0 || got.DrainStuck {
			t.Errorf("freeze %q: %+v", v, got)
		}
	}
}

// The start_gate gauge reads the startGate fact the idle decision
// consulted, and carries a series for each value the table gives it.
func TestGaugesStartGate(t *testing.T) {
	obs := governedObservation(t)
	idle := []engine.Decision{{Machine: "rotation", From: "idle", Facts: []engine.FactValue{{Name: "candidate", Value: true}, {Name: "startGate", Value: "disruptionBudget"}}}}
	if g := gauges(obs, idle).Gate; g != "disruptionBudget" {
		t.Errorf("idle: gate %q", g)
	}
	if g := gauges(obs, []engine.Decision{{Machine: "rotation", From: "draining", Facts: []engine.FactValue{{Name: "startGate", Value: "open"}}}}).Gate; g != "" {
		t.Errorf("in flight: gate %q", g)
	}
	eng, err := loadEngine()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range eng.Table().Facts {
		if f.Name == "startGate" && !slices.Equal(f.Values, metrics.StartGates) {
			t.Errorf("the table's startGate values %v, the gauge's %v", f.Values, metrics.StartGates)
		}
	}
}

// A pass's report of what it observed: Warning findings are evented on the
// pool, fatal ones are not; ShortLead on each claim that cannot get its K
// chances; InvalidAnnotation for a malformed value that kept a claim out —
// as the view cut from the observation carries them.
func TestReportOfFindings(t *testing.T) {
	rec := &recorder{FakeRecorder: record.NewFakeRecorder(20)}
	var lines []logLine
	r := &NodePoolReconciler{Announcer: announce.New(capture(t, 0, &lines), rec)}
	obs := governedObservation(t)
	obs.Findings = []schedule.Finding{
		{Reason: "TGPUnset", Severity: schedule.Warning, Message: "terminationGracePeriod is unset", Remedy: "set it"},
		{Reason: "NoWindows", Severity: schedule.Fatal, Message: "the maintenance windows never open", Remedy: "add one"},
	}
	short1 := nodeClaim("short-1", 30*time.Minute, "")
	short1.Spec.ExpireAfter.Duration = ptrTo(40 * time.Minute)
	short2 := nodeClaim("short-2", 30*time.Minute, "")
	short2.Spec.ExpireAfter.Duration = ptrTo(49 * time.Minute) // = Lead: still short
	long := nodeClaim("long", 30*time.Minute, "")
	long.Spec.ExpireAfter.Duration = ptrTo(50 * time.Minute)
	never := nodeClaim("never", 30*time.Minute, "")
	never.Spec.ExpireAfter.Duration = nil
	obs.Claims = []karpv1.NodeClaim{*short1, *short2, *long, *never}
	obs.BadAnnotations = []census.BadAnnotation{{Object: "NodeClaim/bad", Key: v1alpha1.AnnotationFailedAt, Value: "x", Problem: "not an RFC3339 time"}}
	say(t, r, obs)
	want := []string{
		"Warning TGPUnset terminationGracePeriod is unset; set it",
		"Warning ShortLead expireAfter 40m is not longer than K·P + t_rot = 49m: the schedule cannot guarantee 2 chances; rotated best-effort first",
		"Warning ShortLead expireAfter 49m is not longer than K·P + t_rot = 49m: the schedule cannot guarantee 2 chances; rotated best-effort first",
		`Warning InvalidAnnotation NodeClaim/bad: annotation noderotation.io/failed-at="x" is not an RFC3339 time; the claim is skipped`,
	}
	if got := rec.drain(); !reflect.DeepEqual(got, want) {
		t.Errorf("events\n got %q\nwant %q", got, want)
	}
	on := []string{}
	for _, o := range rec.objs {
		on = append(on, o.(client.Object).GetName())
	}
	if want := []string{"general", "short-1", "short-2", "general"}; !reflect.DeepEqual(on, want) {
		t.Errorf("recorded on %v, want %v", on, want)
	}
	// The next pass with the same findings says nothing new.
	say(t, r, obs)
	if got := rec.drain(); len(got) != 0 {
		t.Errorf("repeated: %q", got)
	}
	// A pool that is not governed has no findings to warn of, but its bad
	// annotations are still reported.
	r = &NodePoolReconciler{Announcer: announce.New(capture(t, 0, &lines), rec)}
	obs.Governance = policy.Governance{}
	say(t, r, obs)
	if got := rec.drain(); !reflect.DeepEqual(got, want[3:]) {
		t.Errorf("ungoverned: %q", got)
	}
}

func ptrTo(d time.Duration) *time.Duration { return &d }

// say hands the announcer one pass's report of what it observed, as
// Reconcile does, and ends the pass.
func say(t *testing.T, r *NodePoolReconciler, obs *observe.Observation) {
	t.Helper()
	if err := r.Announcer.Pass(announce.Report{View: view(obs)}); err != nil {
		t.Fatal(err)
	}
}

// targets hands the steps what the pass observed, and the placeholder to
// create shaped by the controller's configuration.
func TestTargets(t *testing.T) {
	r := &NodePoolReconciler{Placeholder: PlaceholderConfig{Namespace: ns, PriorityClass: "nrc-placeholder", Image: "example.com/pause:1"}}
	obs := governedObservation(t)
	claim := nodeClaim("general-a", 20*time.Minute, "node-a")
	obs.Subject, obs.SubjectName = claim, claim.Name
	obs.OldNode = node("node-a")
	obs.AvoidHostnames = []string{"host-node-a"}
	obs.InducedClaim = nodeClaim("general-s", 336*time.Hour, "")
	obs.Sizing = &surge.Sizing{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("750m")}}
	tg := r.targets(obs)
	if tg.Now != now || tg.Pool != obs.Pool || tg.Claim != "general-a" || tg.ClaimObject != claim || tg.OldNode != obs.OldNode ||
		tg.InducedClaim != obs.InducedClaim || tg.Placeholder != nil {
		t.Errorf("targets %+v", tg)
	}
	if tg.PlaceholderKey != (types.NamespacedName{Namespace: ns, Name: "nrc-surge-general-a"}) {
		t.Errorf("placeholder key %v", tg.PlaceholderKey)
	}
	p := tg.NewPlaceholder
	if p == nil {
		t.Fatal("no placeholder to create")
	}
	if p.Namespace != ns || p.Name != "nrc-surge-general-a" || p.Spec.PriorityClassName != "nrc-placeholder" || p.Spec.Containers[0].Image != "example.com/pause:1" {
		t.Errorf("placeholder %s/%s priority %q image %q", p.Namespace, p.Name, p.Spec.PriorityClassName, p.Spec.Containers[0].Image)
	}
	if cpu := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; cpu.String() != "750m" {
		t.Errorf("requests %s", cpu.String())
	}
	avoid := p.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(avoid) != 1 || !reflect.DeepEqual(avoid[0].Preference.MatchExpressions[0].Values, []string{"host-node-a"}) {
		t.Errorf("avoid %+v", avoid)
	}
	// Karpenter v1.0/v1.1: no preference names kubernetes.io/hostname.
	r.Placeholder.SkipHostnamePreference = true
	if a := r.targets(obs).NewPlaceholder.Spec.Affinity.NodeAffinity; len(a.PreferredDuringSchedulingIgnoredDuringExecution) != 0 {
		t.Errorf("preferences without the hostname preference: %+v", a.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	r.Placeholder.SkipHostnamePreference = false
	// Not sized: nothing to create. Gone: the key still names it.
	obs.Sizing = nil
	if tg := r.targets(obs); tg.NewPlaceholder != nil {
		t.Error("a placeholder without sizing")
	}
	obs.Subject = nil
	obs.Sizing = &surge.Sizing{}
	if tg := r.targets(obs); tg.NewPlaceholder != nil || tg.ClaimObject != nil || tg.PlaceholderKey.Name != "nrc-surge-general-a" {
		t.Errorf("gone claim: %+v", tg)
	}
}

// Node updates matter when labels, annotations, cordon or Ready change —
// not on heartbeats.
func TestNodeChangeMatters(t *testing.T) {
	p := nodeChangeMatters()
	base := func() *corev1.Node {
		n := node("node-a")
		n.Annotations = map[string]string{"a": "1"}
		n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(now)
		return n
	}
	cases := []struct {
		name   string
		change func(*corev1.Node)
		want   bool
	}{
		{"heartbeat only", func(n *corev1.Node) {
			n.Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(now.Add(time.Minute))
			n.ResourceVersion = "2"
		}, false},
		{"allocatable only", func(n *corev1.Node) {
			n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		}, false},
		{"label", func(n *corev1.Node) { n.Labels[v1alpha1.LabelSurgeFor] = "general-a" }, true},
		{"annotation", func(n *corev1.Node) { n.Annotations[v1alpha1.KarpenterDoNotDisrupt] = "true" }, true},
		{"annotation removed", func(n *corev1.Node) { delete(n.Annotations, "a") }, true},
		{"cordon", func(n *corev1.Node) { n.Spec.Unschedulable = true }, true},
		{"NotReady", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
		{"Ready condition gone", func(n *corev1.Node) { n.Status.Conditions = nil }, true},
	}
	for _, c := range cases {
		old, updated := base(), base()
		c.change(updated)
		if got := p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}); got != c.want {
			t.Errorf("%s: passes %v, want %v", c.name, got, c.want)
		}
	}
	if !p.Create(event.CreateEvent{Object: base()}) || !p.Delete(event.DeleteEvent{Object: base()}) {
		t.Error("node creation and deletion must pass")
	}
}

// A policy event re-enqueues every pool.
func TestAllPools(t *testing.T) {
	w := newWorld(t, nil, nodePool("b"), nodePool("a"), nodePool("c"), governing())
	got := w.r.allPools(context.Background(), governing())
	want := []reconcile.Request{request("a"), request("b"), request("c")}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	boom := errors.New("boom")
	w = newWorld(t, &interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return boom }}, nodePool("a"))
	if got := w.r.allPools(context.Background(), governing()); got != nil {
		t.Errorf("on a list error: %v", got)
	}
	if l := *w.lines; len(l) != 1 || l[0].msg != "listing NodePools to re-resolve after a RotationPolicy change" || l[0].kv["error"] != "boom" {
		t.Errorf("error line %+v", l)
	}
}

// The reconciler makes placeholders as its Config says.
func TestNewNodePoolReconcilerPlaceholderConfig(t *testing.T) {
	for _, skip := range []bool{false, true} {
		r := NewNodePoolReconciler(nil, nil, nil, Config{Namespace: ns, PlaceholderPriorityClass: "pc", PlaceholderImage: "m/p:1", SkipHostnamePreference: skip,
			PrePullImage: "m/nrc:1", PrePullImagePullSecrets: []string{"regcred"}}, logr.Discard(), nil)
		if want := (PlaceholderConfig{Namespace: ns, PriorityClass: "pc", Image: "m/p:1", SkipHostnamePreference: skip,
			PrePullImage: "m/nrc:1", PrePullImagePullSecrets: []string{"regcred"}}); !reflect.DeepEqual(r.Placeholder, want) {
			t.Errorf("placeholder config %+v, want %+v", r.Placeholder, want)
		}
	}
}

// targets builds the pre-pull Pod only with the controller's own image, a
// selection with an image to pull, a placeholder to depend on and a surge
// node to bind to; it hands the steps the observed Pod and record as seen.
func TestTargetsBuildThePrePullPod(t *testing.T) {
	r := &NodePoolReconciler{Placeholder: PlaceholderConfig{Namespace: ns, PriorityClass: "nrc-placeholder", PrePullImage: "example.com/nrc:1",
		PrePullImagePullSecrets: []string{"regcred"}}}
	obs := governedObservation(t)
	claim := nodeClaim("general-a", 20*time.Minute, "node-a")
	obs.Subject, obs.SubjectName = claim, claim.Name
	obs.SurgeHost = node("node-b")
	obs.Placeholder = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nrc-surge-general-a", UID: "ph-uid"},
		Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}}}
	obs.Settings.PrePull.Timeout = 5 * time.Minute
	obs.PrePull.Images = []prepull.Image{{Ref: "docker.io/library/nginx:1.25", Fate: prepull.Pull}, {Ref: "docker.io/library/redis:7", Fate: prepull.Present}}
	obs.PrePull.Missing = []string{ns}
	obs.PrePull.Record = &v1alpha1.PrePullRecord{Ended: v1alpha1.PrePullTimeout}
	obs.PrePull.Failed = []string{"x"}
	tg := r.targets(obs)
	if len(tg.NewPrePull) != 1 {
		t.Fatalf("pre-pull Pods to create %v, want one", tg.NewPrePull)
	}
	p := tg.NewPrePull[0]
	if p.Namespace != ns || p.Name != "nrc-prepull-general-a" || p.Spec.NodeName != "node-b" || p.Spec.PriorityClassName != "nrc-placeholder" ||
		p.Spec.InitContainers[0].Image != "example.com/nrc:1" || *p.Spec.ActiveDeadlineSeconds != 300 ||
		len(p.Spec.Containers) != 1 || p.OwnerReferences[0].UID != "ph-uid" || !reflect.DeepEqual(p.Spec.Tolerations, obs.Placeholder.Spec.Tolerations) ||
		!reflect.DeepEqual(p.Spec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}}) {
		t.Errorf("pre-pull Pod %+v", p)
	}
	if tg.PrePullRecord != obs.PrePull.Record || !reflect.DeepEqual(tg.PrePullFailed, []string{"x"}) {
		t.Errorf("record %+v failed %v", tg.PrePullRecord, tg.PrePullFailed)
	}
	for name, change := range map[string]func(*PlaceholderConfig, *observe.Observation){
		"no image configured": func(c *PlaceholderConfig, _ *observe.Observation) { c.PrePullImage = "" },
		"no placeholder":      func(_ *PlaceholderConfig, o *observe.Observation) { o.Placeholder = nil },
		"no surge node":       func(_ *PlaceholderConfig, o *observe.Observation) { o.SurgeHost = nil },
		"none missing":        func(_ *PlaceholderConfig, o *observe.Observation) { o.PrePull.Missing = nil },
	} {
		r2, o2 := &NodePoolReconciler{Placeholder: r.Placeholder}, *obs
		change(&r2.Placeholder, &o2)
		if tg := r2.targets(&o2); tg.NewPrePull != nil {
			t.Errorf("%s: a pre-pull Pod was built", name)
		}
	}
}

// With usePullSecrets, an image whose Pod needs its imagePullSecrets is
// pulled by a Pod in that Pod's namespace, with those secrets, owned by
// the old claim; only the Pods of the namespaces observed missing are
// built.
func TestTargetsBuildAPrePullPodPerNamespaceMissing(t *testing.T) {
	r := &NodePoolReconciler{Placeholder: PlaceholderConfig{Namespace: ns, PriorityClass: "nrc-placeholder", PrePullImage: "example.com/nrc:1",
		PrePullImagePullSecrets: []string{"regcred"}}}
	obs := governedObservation(t)
	claim := nodeClaim("general-a", 20*time.Minute, "node-a")
	claim.UID = "claim-uid"
	obs.Subject, obs.SubjectName = claim, claim.Name
	obs.SurgeHost = node("node-b")
	obs.Placeholder = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nrc-surge-general-a", UID: "ph-uid"}}
	obs.Settings.PrePull.Timeout = 5 * time.Minute
	obs.PrePull.Images = []prepull.Image{
		{Ref: "docker.io/library/nginx:1.25", Fate: prepull.Pull},
		{Ref: "registry.example.com/team-a/app:3", Fate: prepull.Pull, Namespace: "team-a", Secrets: []string{"team-a-registry"}},
	}
	obs.PrePull.Missing = []string{"team-a"}
	tg := r.targets(obs)
	if len(tg.NewPrePull) != 1 {
		t.Fatalf("pre-pull Pods to create %v, want team-a's only", tg.NewPrePull)
	}
	p := tg.NewPrePull[0]
	if p.Namespace != "team-a" || len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Image != "registry.example.com/team-a/app:3" ||
		!reflect.DeepEqual(p.Spec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "team-a-registry"}}) ||
		len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "NodeClaim" || p.OwnerReferences[0].UID != "claim-uid" {
		t.Errorf("team-a's pre-pull Pod %+v", p)
	}
}
