//go:build e2e

package identity_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/noderotation/node-rotation-controller/api/v1alpha1"
	"github.com/noderotation/node-rotation-controller/internal/scheme"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/process"
)

const (
	release   = "nrc-identity"
	namespace = "nrc-identity" // the release namespace
	pool      = "identity"
	workNS    = "identity-work"
	// A PriorityClass of our own: the other suites create the chart's
	// default name without Helm's ownership labels, which Helm refuses to
	// adopt.
	priorityClass = "nrc-identity-placeholder"
)

// world is what the test talks to: the admin client and config of the
// local cluster and the API server's audit log.
type world struct {
	ctx      context.Context
	admin    client.Client
	config   *rest.Config
	kubecfg  string
	auditLog string
}

func TestChartIdentity(t *testing.T) {
	w := newWorld(t)
	since := time.Now()

	w.installOlderCRD(t)
	sa := w.installChart(t)
	w.upgradeCRDs(t)
	args := w.deploymentArgs(t)
	cert := w.mountedCert(t)
	ctrl, metricsPort := w.runAs(t, sa, args, "TMPDIR="+cert.tmpdir)
	w.expectMetricsAuth(t, metricsPort, cert)
	t.Cleanup(func() {
		if t.Failed() {
			w.printForbidden(t, sa, since)
		}
	})

	w.createWorkload(t)
	originals := w.claimNames(t)
	// Two nodes or more: Karpenter's kwok provider sizes a node to the
	// requests that made it, so the count depends on its batching.
	if len(originals) < 2 {
		t.Fatalf("the workload should fill two nodes or more, got claims %v", originals)
	}

	failed := w.rollBack(t, originals)
	w.rotate(t, otherThan(originals, failed))
	w.expectPlugin(t)

	if !ctrl.Stop(30 * time.Second) {
		t.Errorf("the controller did not exit on SIGTERM within 30s")
	}
	w.expectLeaseReleased(t)
	w.expectNoForbidden(t, sa, since)
	w.reinstallServerSide(t)
}

func newWorld(t *testing.T) *world {
	// The rollback below needs a surge node slower to boot than its 4 s
	// readyTimeout.
	must(t, fixtures.RequireBootDelay(6000), "the node boot delay")
	kubecfg := os.Getenv("KUBECONFIG")
	audit := os.Getenv("NRC_AUDIT_LOG")
	if kubecfg == "" || audit == "" {
		t.Fatalf("KUBECONFIG and NRC_AUDIT_LOG must name the local cluster's kubeconfig and audit log: run through `make test-e2e`")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubecfg)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubecfg, err)
	}
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	// the CRD upgrade reads and writes CustomResourceDefinitions
	must(t, apiextensionsv1.AddToScheme(s), "adding apiextensions/v1 to the scheme")
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &world{ctx: ctx, admin: c, config: cfg, kubecfg: kubecfg, auditLog: audit}
}

// rollBack waits for the first attempt, whose readyTimeout (4 s) is shorter
// than the cluster's node boot delay (8 s): its surge NodeClaim is launched,
// then reaped, and the old node restored. It returns the failed claim.
func (w *world) rollBack(t *testing.T, originals []string) string {
	t.Helper()
	p := fixtures.Policy(pool, "30s")
	p.Spec.Surge.ReadyTimeout = "4s"
	p.Spec.Surge.RetryBackoff = "1h"
	p.Spec.Surge.FailurePause = "1h"
	must(t, w.admin.Create(w.ctx, p), "creating the RotationPolicy")
	t.Cleanup(func() { _ = w.admin.Delete(context.Background(), p) })

	eventually(t, 3*time.Minute, "a surge NodeClaim launched for the first attempt", func() (bool, error) {
		claims, err := w.claims()
		return len(claims) > len(originals), err
	})
	var failed string
	eventually(t, 3*time.Minute, "the attempt rolled back with a failure record", func() (bool, error) {
		claims, err := w.claims()
		for _, c := range claims {
			if c.Annotations[v1alpha1.AnnotationRetryCount] == "1" && c.Annotations[v1alpha1.AnnotationFailedAt] != "" {
				failed = c.Name
			}
		}
		return failed != "" && !w.anchored(), err
	})
	eventually(t, 2*time.Minute, "the surge NodeClaim reaped", func() (bool, error) {
		claims, err := w.claims()
		return len(claims) == len(originals), err
	})
	c := &karpv1.NodeClaim{}
	must(t, w.admin.Get(w.ctx, client.ObjectKey{Name: failed}, c), "reading the failed claim")
	if c.DeletionTimestamp != nil || c.Annotations[v1alpha1.AnnotationState] != v1alpha1.StateFailed {
		t.Fatalf("rolled-back claim %s: deleting=%v state=%q, want kept and state failed", failed, c.DeletionTimestamp != nil, c.Annotations[v1alpha1.AnnotationState])
	}
	n := &corev1.Node{}
	must(t, w.admin.Get(w.ctx, client.ObjectKey{Name: c.Status.NodeName}, n), "reading the restored node")
	if n.Spec.Unschedulable || n.Annotations[v1alpha1.KarpenterDoNotDisrupt] != "" || n.Annotations[v1alpha1.AnnotationDoNotDisruptOwned] != "" {
		t.Fatalf("node %s not restored: unschedulable=%v annotations=%v", n.Name, n.Spec.Unschedulable, n.Annotations)
	}
	t.Logf("attempt on %s rolled back: surge claim launched and reaped, node %s restored", failed, n.Name)
	return failed
}

// rotate lets the next attempt succeed (a readyTimeout above the boot
// delay, no failure pause) and waits for claim to be rotated away, then
// stops further starts and waits for the pool to settle.
func (w *world) rotate(t *testing.T, claim string) {
	t.Helper()
	w.updatePolicy(t, func(p *v1alpha1.RotationPolicy) {
		p.Spec.Surge.ReadyTimeout = "3m"
		p.Spec.Surge.FailurePause = "0s"
	})
	eventually(t, 5*time.Minute, "claim "+claim+" rotated away", func() (bool, error) {
		err := w.admin.Get(w.ctx, client.ObjectKey{Name: claim}, &karpv1.NodeClaim{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	w.updatePolicy(t, func(p *v1alpha1.RotationPolicy) { p.Spec.AgeThreshold = "720h" })
	eventually(t, 3*time.Minute, "no rotation in flight", func() (bool, error) { return !w.anchored(), nil })
	t.Logf("claim %s rotated", claim)
}

func (w *world) updatePolicy(t *testing.T, edit func(*v1alpha1.RotationPolicy)) {
	t.Helper()
	eventually(t, 30*time.Second, "updating the RotationPolicy", func() (bool, error) {
		p := &v1alpha1.RotationPolicy{}
		if err := w.admin.Get(w.ctx, client.ObjectKey{Name: pool}, p); err != nil {
			return false, err
		}
		edit(p)
		return true, w.admin.Update(w.ctx, p)
	})
}

// createWorkload creates the NodePool and a Deployment of four 1.5-core
// Pods under a maxUnavailable-1 PDB (two 4-core nodes), and waits for all
// four to be Ready.
func (w *world) createWorkload(t *testing.T) {
	t.Helper()
	app := map[string]string{"app": "identity"}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: workNS}}
	np := fixtures.RotationPool(pool)
	for _, o := range []client.Object{ns, np, fixtures.PDB(workNS, "web", 1, app), fixtures.Workload(workNS, "web", pool, 4, "1500m", app)} {
		must(t, w.admin.Create(w.ctx, o), "creating "+o.GetName())
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = w.admin.Delete(ctx, ns)
		_ = w.admin.Delete(ctx, np)
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(context.Context) (bool, error) {
			claims, err := w.claims()
			return err == nil && len(claims) == 0, nil
		})
		if err != nil {
			t.Logf("cleanup: NodeClaims of %s still present after 3m", pool)
		}
	})
	eventually(t, 3*time.Minute, "four workload Pods Ready", func() (bool, error) {
		pods := &corev1.PodList{}
		if err := w.admin.List(w.ctx, pods, client.InNamespace(workNS), client.MatchingLabels(app)); err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
					ready++
				}
			}
		}
		return ready == 4, nil
	})
}

func (w *world) claims() ([]karpv1.NodeClaim, error) {
	list := &karpv1.NodeClaimList{}
	err := w.admin.List(w.ctx, list, client.MatchingLabels{karpv1.NodePoolLabelKey: pool})
	return list.Items, err
}

func (w *world) claimNames(t *testing.T) []string {
	t.Helper()
	claims, err := w.claims()
	must(t, err, "listing NodeClaims")
	var names []string
	for _, c := range claims {
		names = append(names, c.Name)
	}
	return names
}

// anchored reports whether the pool has a rotation in flight (any
// rotation-scoped key); an unreadable pool counts as anchored.
func (w *world) anchored() bool {
	np := &karpv1.NodePool{}
	if err := w.admin.Get(w.ctx, client.ObjectKey{Name: pool}, np); err != nil {
		return true
	}
	for _, k := range v1alpha1.RotationScoped {
		if _, ok := np.Annotations[k]; ok {
			return true
		}
	}
	return false
}

func otherThan(names []string, not string) string {
	for _, n := range names {
		if n != not {
			return n
		}
	}
	return ""
}

// runAs starts the controller binary with args and env under a token of
// the ServiceAccount sa, its listeners moved to free loopback ports; it
// returns the process and its metrics port.
func (w *world) runAs(t *testing.T, sa string, args []string, env ...string) (*process.Controller, int) {
	t.Helper()
	root, err := filepath.Abs("../../..")
	must(t, err, "repository root")
	bin, err := process.Binary(root, t.TempDir())
	must(t, err, "the controller binary")
	ports, err := process.FreePorts(2)
	must(t, err, "ports")
	kubeconfig := w.tokenKubeconfig(t, sa)
	var run []string
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "-metrics-bind-address="):
			a = fmt.Sprintf("-metrics-bind-address=127.0.0.1:%d", ports[0])
		case strings.HasPrefix(a, "-health-probe-bind-address="):
			a = fmt.Sprintf("-health-probe-bind-address=127.0.0.1:%d", ports[1])
		}
		run = append(run, a)
	}
	run = append(run, "-kubeconfig="+kubeconfig)
	ctrl, err := process.StartWithEnv(bin, filepath.Join(os.TempDir(), "node-rotation-controller-e2e"), "identity", env, run...)
	must(t, err, "starting the controller")
	t.Logf("controller %s (pid %d) as system:serviceaccount:%s:%s with %v; log %s", bin, ctrl.Pid(), namespace, sa, run, ctrl.Log)
	t.Cleanup(func() {
		ctrl.Stop(30 * time.Second)
		if t.Failed() {
			t.Logf("--- controller log tail (%s) ---\n%s", ctrl.Log, ctrl.Tail(12000))
		}
	})
	return ctrl, ports[0]
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		if err != nil {
			last = err
			return false, nil
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: not within %s (last error: %v)", what, timeout, last)
	}
}

func must(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
