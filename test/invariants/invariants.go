// Package invariants is the checker the chaos suites share
// (docs/test-world.md#chaos-suites-testchaos): after the controller has
// quiesced — killed and restarted, or run through API faults — it reads
// the cluster, the controller's logs and Events, and the watch record, and
// reports every state a rotation must never leave behind and every
// announcement made twice. A completion lost to an interrupted write (the
// at-most-once loss docs/design.md#anchor-protocol accepts) is counted and
// reported, not hidden and not a violation.
package invariants

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/surge"
	"github.com/noderotation/node-rotation-controller/test/recorder"
)

// The invariants, as they name a violation.
const (
	InFlight           = "rotation-in-flight"     // the pool still anchors a rotation after quiescence
	PoolKeyLeft        = "pool-key-left"          // a rotation-scoped key outlived its rotation
	PlaceholderLeft    = "placeholder-left"       // a placeholder Pod outlived its rotation
	PrePullLeft        = "prepull-left"           // a pre-pull Pod, in any namespace, outlived its rotation
	NodeMarked         = "node-marked"            // surge-for, our do-not-disrupt or our cordon left on a node
	ClaimInFlight      = "claim-in-flight"        // a claim left pending or draining
	NotRotated         = "original-not-rotated"   // an original claim still exists
	ExtraNodeClaims    = "nodeclaims-over-budget" // more NodeClaims created than rotation attempts
	AnnouncedTwice     = "announced-twice"        // one completion or failure announced more than once
	NeverAnnounced     = "never-announced"        // a completion or failure lost with no interrupted write to explain it
	PendingTooLong     = "pod-pending-too-long"   // a workload Pod waited longer than the bound
	BelowMinHealthy    = "pdb-violated"           // fewer healthy workload Pods than the PDB allows
	LogUnreadable      = "log-unreadable"         // a log file the checker was given cannot be read
	OverMaxUnavailable = "over-max-unavailable"   // more rotations, placeholders or deletes of a pool at once than maxUnavailable
)

// Input is what the checker needs to know about a run.
type Input struct {
	Client client.Client
	// Pools are the NodePools under test; nodes, claims and announcements of
	// other pools are not looked at.
	Pools []string
	// Namespace is the controller's: where its placeholders live.
	Namespace string
	// Originals are the claims the run was to rotate: each must be gone.
	Originals []string
	// Attempts is the number of rotation attempts in the run, Created the
	// number of NodeClaims created in the pools (Attempts, Created): a surge
	// costs at most one node per attempt.
	Attempts, Created int
	// Logs are the controller's log files (-log-format=json), one per
	// process run, in order.
	Logs []string
	// InterruptedEnds is the number of writes that ended a rotation — an
	// anchor release or an expiry record — whose answer the controller
	// never got (killed, or applied then answered 500). Each may lose that
	// rotation's completion line; more losses than this are violations.
	InterruptedEnds int
	// InterruptedFailures is the number of writes that failed an attempt
	// (a claim moved to state failed) whose answer the controller never
	// got: each may lose that failure's line.
	InterruptedFailures int
	// Records and SinceRV, when set, let the checker see the run as the
	// watch saw it: the rotations anchored after SinceRV, and the Workloads.
	Records   *recorder.Recorder
	SinceRV   int64
	Workloads []Workload
	// MaxAtOnce, when set with Records, is the pools' maxUnavailable: no
	// more slots anchored, placeholders or rotated claims deleting at once.
	MaxAtOnce int
	// Now ends the observation of a Pod still pending; time.Now when zero.
	Now time.Time
}

// Workload is a set of Pods whose disruption the run must bound.
type Workload struct {
	Namespace string
	Selector  map[string]string
	// MinHealthy is the PDB's floor: Ready, non-terminating Pods never
	// fewer than this after SinceRV (0: not checked).
	MinHealthy int
	// MaxPending bounds how long a Pod created after SinceRV may wait to
	// run (0: not checked).
	MaxPending time.Duration
}

// Violation is one broken invariant.
type Violation struct {
	Invariant string
	Object    string // kind/name
	Detail    string
}

func (v Violation) String() string { return fmt.Sprintf("%s %s: %s", v.Invariant, v.Object, v.Detail) }

// Report is the checker's answer.
type Report struct {
	Checks     int
	Violations []Violation
	// Lost are the announcements never made — "completion of <claim>" or
	// "failure of <claim> (retry n)" — each explained by an interrupted
	// write that earned it.
	Lost []string
	// Completions is how many rotations were announced complete.
	Completions int
}

// Summary is the one-line result the suites print.
func (r *Report) Summary() string {
	return fmt.Sprintf("invariants: %d checks, %d violations, %d announcements lost to kills", r.Checks, len(r.Violations), len(r.Lost))
}

// String is the summary with every violation and lost announcement.
func (r *Report) String() string {
	var b strings.Builder
	b.WriteString(r.Summary())
	for _, v := range r.Violations {
		b.WriteString("\n  VIOLATION " + v.String())
	}
	for _, l := range r.Lost {
		b.WriteString("\n  lost announcement: " + l)
	}
	return b.String()
}

func (r *Report) check(ok bool, invariant, object, format string, args ...any) {
	r.Checks++
	if !ok {
		r.Violations = append(r.Violations, Violation{Invariant: invariant, Object: object, Detail: fmt.Sprintf(format, args...)})
	}
}

// Check reads the cluster and the logs and reports. An error means the
// checker could not look (a failed List), never a violation.
func Check(ctx context.Context, in Input) (*Report, error) {
	r := &Report{}
	pools := map[string]bool{}
	for _, p := range in.Pools {
		pools[p] = true
	}
	if err := checkPools(ctx, in, r); err != nil {
		return nil, err
	}
	if err := checkPlaceholders(ctx, in, pools, r); err != nil {
		return nil, err
	}
	if err := checkPrePullPods(ctx, in, pools, r); err != nil {
		return nil, err
	}
	if err := checkNodes(ctx, in, pools, r); err != nil {
		return nil, err
	}
	claims, err := checkClaims(ctx, in, r)
	if err != nil {
		return nil, err
	}
	r.check(in.Created <= in.Attempts, ExtraNodeClaims, "NodePools/"+strings.Join(in.Pools, ","),
		"%d NodeClaims created for %d rotation attempts", in.Created, in.Attempts)
	if err := checkAnnouncements(ctx, in, pools, claims, r); err != nil {
		return nil, err
	}
	checkWorkloads(in, r)
	checkAtOnce(in, r)
	return r, nil
}

func checkPools(ctx context.Context, in Input, r *Report) error {
	for _, name := range in.Pools {
		np := &karpv1.NodePool{}
		if err := in.Client.Get(ctx, client.ObjectKey{Name: name}, np); err != nil {
			return fmt.Errorf("reading NodePool %s: %w", name, err)
		}
		// every rotation slot's keys (docs/design.md#throughput)
		for k, v := range np.Annotations {
			slot, base, ok := v1alpha1.SlotOf(k)
			switch {
			case !ok || base == v1alpha1.AnnotationLastRotationAt:
			case base == v1alpha1.AnnotationActiveRotation:
				r.check(false, InFlight, "NodePool/"+name, "still anchors %q in %s after quiescence", v, k)
			default:
				_, anchored := np.Annotations[slot.Key(v1alpha1.AnnotationActiveRotation)]
				r.check(anchored, PoolKeyLeft, "NodePool/"+name, "%s=%q with no rotation anchored", k, v)
			}
		}
	}
	return nil
}

// checkPlaceholders: no placeholder of the pools is left — labelled for
// one of them, or named for one of their claims (Karpenter names a claim
// <pool>-<suffix>) should a label have been lost.
func checkPlaceholders(ctx context.Context, in Input, pools map[string]bool, r *Report) error {
	pods := &corev1.PodList{}
	if err := in.Client.List(ctx, pods, client.InNamespace(in.Namespace)); err != nil {
		return fmt.Errorf("listing Pods in %s: %w", in.Namespace, err)
	}
	r.Checks++ // one check however many Pods: none may be a placeholder
	for _, p := range pods.Items {
		if _, prePull := p.Labels[v1alpha1.LabelPrePullFor]; prePull {
			continue // checkPrePullPods' to judge
		}
		ours := pools[p.Labels[v1alpha1.LabelNodePool]]
		for pool := range pools {
			ours = ours || strings.HasPrefix(p.Name, surge.PlaceholderName(pool+"-"))
		}
		if ours {
			r.Violations = append(r.Violations, Violation{PlaceholderLeft, "Pod/" + p.Namespace + "/" + p.Name,
				fmt.Sprintf("placeholder for %q (phase %s, deleting %v)", p.Labels[v1alpha1.LabelSurgeFor], p.Status.Phase, p.DeletionTimestamp != nil)})
		}
	}
	return nil
}

// checkPrePullPods: no pre-pull Pod of the pools is left in any namespace
// (labelled for one of them, or for one of their claims should the pool
// label have been lost):
// with usePullSecrets the rotation makes them in its moving Pods'
// namespaces too (docs/design.md#pre-pull-secrets).
func checkPrePullPods(ctx context.Context, in Input, pools map[string]bool, r *Report) error {
	pods := &corev1.PodList{}
	if err := in.Client.List(ctx, pods, client.HasLabels{v1alpha1.LabelPrePullFor}); err != nil {
		return fmt.Errorf("listing pre-pull Pods: %w", err)
	}
	r.Checks++ // one check however many Pods: none may be left
	for _, p := range pods.Items {
		ours := pools[p.Labels[v1alpha1.LabelNodePool]]
		for pool := range pools {
			ours = ours || strings.HasPrefix(p.Labels[v1alpha1.LabelPrePullFor], pool+"-")
		}
		if ours {
			r.Violations = append(r.Violations, Violation{PrePullLeft, "Pod/" + p.Namespace + "/" + p.Name,
				fmt.Sprintf("pre-pull Pod for %q (phase %s, deleting %v)", p.Labels[v1alpha1.LabelPrePullFor], p.Status.Phase, p.DeletionTimestamp != nil)})
		}
	}
	return nil
}

// checkNodes: no node of the pools keeps a marker of a rotation. Nobody but
// the controller sets do-not-disrupt or a cordon in the suites, so either
// without our marker is also reported: our marker may be what was lost.
func checkNodes(ctx context.Context, in Input, pools map[string]bool, r *Report) error {
	nodes := &corev1.NodeList{}
	if err := in.Client.List(ctx, nodes); err != nil {
		return fmt.Errorf("listing Nodes: %w", err)
	}
	for _, n := range nodes.Items {
		if !pools[n.Labels[karpv1.NodePoolLabelKey]] {
			continue // another suite's pool: not this run's to judge
		}
		_, surgeFor := n.Labels[v1alpha1.LabelSurgeFor]
		obj := "Node/" + n.Name
		r.check(!surgeFor, NodeMarked, obj, "label %s=%s", v1alpha1.LabelSurgeFor, n.Labels[v1alpha1.LabelSurgeFor])
		r.check(n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned] != "true" && n.Annotations[v1alpha1.KarpenterDoNotDisrupt] != "true",
			NodeMarked, obj, "%s=%q, %s=%q", v1alpha1.KarpenterDoNotDisrupt, n.Annotations[v1alpha1.KarpenterDoNotDisrupt],
			v1alpha1.AnnotationDoNotDisruptOwned, n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned])
		_, cordonMarker := n.Annotations[v1alpha1.AnnotationCordoned]
		// a node Karpenter is deleting may be unschedulable on its own account
		cordoned := n.Spec.Unschedulable && n.DeletionTimestamp == nil
		r.check(!cordonMarker && !cordoned, NodeMarked, obj, "cordon left: spec.unschedulable=%v, %s present %v",
			n.Spec.Unschedulable, v1alpha1.AnnotationCordoned, cordonMarker)
	}
	return nil
}

// checkClaims returns the pools' claims by name.
func checkClaims(ctx context.Context, in Input, r *Report) (map[string]*karpv1.NodeClaim, error) {
	out := map[string]*karpv1.NodeClaim{}
	for _, pool := range in.Pools {
		list := &karpv1.NodeClaimList{}
		if err := in.Client.List(ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool}); err != nil {
			return nil, fmt.Errorf("listing NodeClaims of %s: %w", pool, err)
		}
		for i := range list.Items {
			c := &list.Items[i]
			out[c.Name] = c
			s := c.Annotations[v1alpha1.AnnotationState]
			r.check(s != v1alpha1.StatePending && s != v1alpha1.StateDraining, ClaimInFlight, "NodeClaim/"+c.Name, "state %q", s)
		}
	}
	for _, name := range in.Originals {
		c := &karpv1.NodeClaim{}
		err := in.Client.Get(ctx, client.ObjectKey{Name: name}, c)
		switch {
		case apierrors.IsNotFound(err):
			r.check(true, NotRotated, "", "")
		case err != nil:
			return nil, fmt.Errorf("reading NodeClaim %s: %w", name, err)
		default:
			r.check(false, NotRotated, "NodeClaim/"+name, "still exists (state %q, deleting %v)",
				c.Annotations[v1alpha1.AnnotationState], c.DeletionTimestamp != nil)
		}
	}
	return out, nil
}

// checkAnnouncements: every rotation that ended — its claim gone — was
// announced complete exactly once, by log line and by Event, and every
// failed attempt at most once.
func checkAnnouncements(ctx context.Context, in Input, pools map[string]bool, claims map[string]*karpv1.NodeClaim, r *Report) error {
	lines, bad := ReadLogs(in.Logs)
	for _, b := range bad {
		r.check(false, LogUnreadable, b, "cannot be read")
	}
	// completions[claim][run] and failures[claim/retry][run]
	completions := map[string]map[int]int{}
	failures := map[string]map[int]int{}
	swept := map[string]bool{}
	for _, l := range lines {
		if !pools[l.Pool] && !(l.Pool == "" && ofPools(l.NodeClaim, pools)) {
			continue
		}
		switch {
		case l.Msg == "rotation complete" && l.Rotation != "":
			count(completions, l.Rotation, l.Run)
		case l.Msg == "rotation attempt failed" && attemptFailure[l.Reason] && l.Rotation != "":
			count(failures, l.Rotation+" retry "+l.RetryCount, l.Run)
		case l.Msg == "rotation attempt failed" && l.NodeClaim != "":
			// the startup sweep's or a stranded repair's: no retry count
			swept[l.NodeClaim] = true
		}
	}
	for _, key := range sortedKeys(completions) {
		r.Completions++
		twice(r, "rotation complete", "NodeClaim/"+key, completions[key])
	}
	for _, key := range sortedKeys(failures) {
		twice(r, "rotation attempt failed", "NodeClaim/"+strings.Fields(key)[0], failures[key])
	}

	events := &corev1.EventList{}
	if err := in.Client.List(ctx, events); err != nil {
		return fmt.Errorf("listing Events: %w", err)
	}
	type announced struct{ reason, obj, what string }
	byKey := map[announced]int{}
	for _, e := range events.Items {
		n := max(int(e.Count), 1) // the recorder counts a repeat on the first Event
		switch {
		case e.Reason == "RotationCompleted" && e.InvolvedObject.Kind == "NodePool" && pools[e.InvolvedObject.Name]:
			var claim string
			if _, err := fmt.Sscanf(e.Message, "old NodeClaim %s finalized", &claim); err == nil {
				byKey[announced{e.Reason, "NodeClaim/" + strings.TrimSuffix(claim, ";"), "completion"}] += n
			}
		case e.Reason == "RotationFailed" && e.InvolvedObject.Kind == "NodeClaim":
			if _, rest, ok := strings.Cut(e.Message, "(retry "); ok {
				retry := strings.TrimRight(strings.Fields(rest)[0], ",")
				byKey[announced{e.Reason, "NodeClaim/" + e.InvolvedObject.Name, "failure of retry " + retry}] += n
			}
		}
	}
	keys := slices.SortedFunc(maps.Keys(byKey), func(a, b announced) int { return strings.Compare(a.obj+a.what, b.obj+b.what) })
	for _, k := range keys {
		r.check(byKey[k] <= 1, AnnouncedTwice, k.obj, "Event %s (%s) recorded %d times", k.reason, k.what, byKey[k])
	}

	// Rotations that ended: the originals that are gone, and every claim
	// the record shows anchored since SinceRV that is gone.
	ended := map[string]bool{}
	for _, name := range in.Originals {
		if claims[name] == nil {
			ended[name] = true
		}
	}
	for _, name := range Anchored(in.Records, in.Pools, in.SinceRV) {
		if claims[name] == nil {
			ended[name] = true
		}
	}
	budget := in.InterruptedEnds
	for _, name := range sortedKeys(ended) {
		announced := len(completions[name]) > 0
		r.lostOrViolation(announced, &budget, "completion of "+name, "NodeClaim/"+name,
			"the rotation ended (claim gone) and no process logged its completion, with no interrupted release to explain it")
	}
	// Every failure in the run — a claim moved to failed, named by the
	// retry count that write gave it — was announced.
	budget = in.InterruptedFailures
	for _, f := range failedDuring(in, claims) {
		announced := len(failures[f.claim+" retry "+f.retry]) > 0 || swept[f.claim]
		r.lostOrViolation(announced, &budget, fmt.Sprintf("failure of %s (retry %s)", f.claim, f.retry), "NodeClaim/"+f.claim,
			fmt.Sprintf("failed (retry %s) and no process logged the failure, with no interrupted failure write to explain it", f.retry))
	}
	return nil
}

type failure struct{ claim, retry string }

// failedDuring are the failures of the run: with a record, every move of
// a pool's claim into failed (or to a higher retry count) after SinceRV;
// without one, the latest failure of each claim now failed.
func failedDuring(in Input, claims map[string]*karpv1.NodeClaim) []failure {
	var out []failure
	if in.Records == nil {
		for _, name := range sortedKeys(claims) {
			if a := claims[name].Annotations; a[v1alpha1.AnnotationState] == v1alpha1.StateFailed {
				out = append(out, failure{name, a[v1alpha1.AnnotationRetryCount]})
			}
		}
		return out
	}
	last := map[string]failure{}
	for _, rec := range in.Records.Sorted() {
		if rec.Kind != "NodeClaim" || recorder.Deleted(rec) || !slices.Contains(in.Pools, rec.Obj.GetLabels()[karpv1.NodePoolLabelKey]) {
			continue
		}
		a := rec.Obj.GetAnnotations()
		f := failure{rec.Obj.GetName(), a[v1alpha1.AnnotationRetryCount]}
		if a[v1alpha1.AnnotationState] != v1alpha1.StateFailed {
			f.retry = ""
		}
		if f.retry != "" && last[f.claim] != f && rec.RV > in.SinceRV {
			out = append(out, f)
		}
		last[f.claim] = f
	}
	return out
}

// lostOrViolation: an announcement made passes; one missing is lost while
// interrupted writes can explain it, a violation once they cannot.
func (r *Report) lostOrViolation(announced bool, budget *int, what, obj, detail string) {
	switch {
	case announced:
		r.check(true, NeverAnnounced, "", "")
	case *budget > 0:
		*budget--
		r.Checks++
		r.Lost = append(r.Lost, what)
	default:
		r.check(false, NeverAnnounced, obj, "%s", detail)
	}
}

// ofPools reports whether a claim belongs to one of the pools by its name
// (Karpenter names a claim <pool>-<suffix>): the startup sweep's lines name
// the claim but not its pool.
func ofPools(claim string, pools map[string]bool) bool {
	for p := range pools {
		if strings.HasPrefix(claim, p+"-") {
			return true
		}
	}
	return false
}

func count(m map[string]map[int]int, key string, run int) {
	if m[key] == nil {
		m[key] = map[int]int{}
	}
	m[key][run]++
}

// twice reports an announcement made more than once, in one process or
// across processes: the write that earns it is elected once, so a second
// announcement is never a legitimate retry.
func twice(r *Report, what, obj string, runs map[int]int) {
	total := 0
	for run, n := range runs {
		total += n
		r.check(n <= 1, AnnouncedTwice, obj, "%q logged %d times by process run %d", what, n, run+1)
	}
	if len(runs) > 1 {
		r.check(false, AnnouncedTwice, obj, "%q logged %d times across %d process runs", what, total, len(runs))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
