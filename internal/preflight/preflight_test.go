package preflight

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	_ "github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

// These tests need no API server: discovery is served by an in-process HTTP
// server, and a fake client with interceptors plays the SelfSubjectAccessReview
// and the Priority admission plugin. test/envtest/preflight runs the same
// checks against a real kube-apiserver.

// serveDiscovery serves /apis/karpenter.sh/v1 with the given resources; nil
// resources answer 404, as a cluster without Karpenter does.
func serveDiscovery(t *testing.T, resources ...string) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/karpenter.sh/v1" || resources == nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: http.StatusNotFound, Message: "the server could not find the requested resource"})
			return
		}
		list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "karpenter.sh/v1"}
		for _, name := range resources {
			list.APIResources = append(list.APIResources, metav1.APIResource{Name: name, Kind: name, Verbs: metav1.Verbs{"get", "list", "watch"}})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}
}

// cluster is the fake API: its RBAC answers, its PriorityClasses (stored in
// the fake client) and a record of what preflight asked.
type cluster struct {
	denied    map[string]bool // "verb resource" pairs RBAC refuses
	ssarErr   error           // returned for every SelfSubjectAccessReview
	podErr    error           // returned for the dry-run Pod instead of admission
	podErrs   []error         // returned, one a create, before podErr or admission
	asked     []string        // "verb resource" of every review, in order
	podDryRun []bool          // whether each Pod create was a dry run
	client    client.Client
}

func newCluster(t *testing.T, classes ...*schedulingv1.PriorityClass) *cluster {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{denied: map[string]bool{}}
	b := fake.NewClientBuilder().WithScheme(s)
	for _, pc := range classes {
		b = b.WithObjects(pc)
	}
	c.client = interceptor.NewClient(b.Build(), interceptor.Funcs{Create: c.create})
	return c
}

func (c *cluster) create(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
	switch o := obj.(type) {
	case *authorizationv1.SelfSubjectAccessReview:
		ra := o.Spec.ResourceAttributes
		if ra == nil || !(ra.Group == "karpenter.sh" && ra.Namespace == "" || ra.Group == "policy" && ra.Resource == "poddisruptionbudgets" && ra.Namespace == "" ||
			ra.Group == "" && ra.Resource == "events" && ra.Namespace == "nrc") || ra.Version != "v1" {
			return fmt.Errorf("unexpected review %+v", o.Spec)
		}
		key := ra.Verb + " " + ra.Resource
		c.asked = append(c.asked, key)
		if c.ssarErr != nil {
			return c.ssarErr
		}
		o.Status.Allowed = !c.denied[key]
		return nil
	case *corev1.Pod:
		co := &client.CreateOptions{}
		co.ApplyOptions(opts)
		c.podDryRun = append(c.podDryRun, slices.Contains(co.DryRun, metav1.DryRunAll))
		if len(c.podErrs) > 0 {
			err := c.podErrs[0]
			c.podErrs = c.podErrs[1:]
			return err
		}
		if c.podErr != nil {
			return c.podErr
		}
		// The Priority admission plugin: resolve the class onto the Pod.
		pc := &schedulingv1.PriorityClass{}
		if err := cl.Get(ctx, client.ObjectKey{Name: o.Spec.PriorityClassName}, pc); err != nil {
			if apierrors.IsNotFound(err) {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, o.GenerateName,
					fmt.Errorf("no PriorityClass with name %s was found", o.Spec.PriorityClassName))
			}
			return err
		}
		o.Spec.Priority = ptr.To(pc.Value)
		o.Spec.PreemptionPolicy = pc.PreemptionPolicy
		return cl.Create(ctx, o, opts...)
	}
	return cl.Create(ctx, obj, opts...)
}

func class(value int32, policy *corev1.PreemptionPolicy) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "placeholder"}, Value: value, PreemptionPolicy: policy}
}

var allReads = []string{"get nodeclaims", "list nodeclaims", "watch nodeclaims", "get nodepools", "list nodepools", "watch nodepools", "list poddisruptionbudgets", "watch poddisruptionbudgets", "list events"}

func TestCheckPasses(t *testing.T) {
	c := newCluster(t, class(-10, ptr.To(corev1.PreemptNever)))
	if err := Check(context.Background(), serveDiscovery(t, "nodeclaims", "nodepools", "nodeclaims/status"), c.client, "nrc", "placeholder"); err != nil {
		t.Fatalf("preflight failed: %v", err)
	}
	if !slices.Equal(c.asked, allReads) {
		t.Errorf("reviews asked = %v, want %v", c.asked, allReads)
	}
	if !slices.Equal(c.podDryRun, []bool{true}) {
		t.Errorf("pod creates (dry run?) = %v, want one dry run", c.podDryRun)
	}
	pods := &corev1.PodList{}
	if err := c.client.List(context.Background(), pods); err != nil || len(pods.Items) != 0 {
		t.Errorf("the dry run left pods behind: %v %v", pods.Items, err)
	}
}

func TestCheckFailures(t *testing.T) {
	never, lower := ptr.To(corev1.PreemptNever), ptr.To(corev1.PreemptLowerPriority)
	cases := []struct {
		name      string
		resources []string // served by karpenter.sh/v1; nil: not served
		classes   []*schedulingv1.PriorityClass
		setup     func(*cluster)
		want      string
		asked     int // reviews made before the failure
		pods      int // dry-run Pods created before the failure
	}{
		{"Karpenter v1 not installed", nil, nil, nil,
			"preflight: the cluster does not serve karpenter.sh/v1 (is Karpenter v1 installed?): ", 0, 0},
		{"nodepools missing", []string{"nodeclaims"}, nil, nil,
			"preflight: karpenter.sh/v1 does not serve nodepools", 0, 0},
		{"both missing", []string{"ec2nodeclasses"}, nil, nil,
			"preflight: karpenter.sh/v1 does not serve nodeclaims, nodepools", 0, 0},
		{"the review itself fails", []string{"nodeclaims", "nodepools"}, nil, func(c *cluster) { c.ssarErr = errors.New("connection refused") },
			"preflight: asking whether RBAC allows get nodeclaims.karpenter.sh: connection refused", 1, 0},
		{"RBAC denies getting nodeclaims", []string{"nodeclaims", "nodepools"}, nil, func(c *cluster) { c.denied["get nodeclaims"] = true },
			"preflight: RBAC does not allow this controller to get nodeclaims.karpenter.sh (grant the ClusterRole of the chart)", 1, 0},
		{"RBAC denies watching nodepools", []string{"nodeclaims", "nodepools"}, nil, func(c *cluster) { c.denied["watch nodepools"] = true },
			"preflight: RBAC does not allow this controller to watch nodepools.karpenter.sh", 6, 0},
		{"RBAC denies listing PodDisruptionBudgets", []string{"nodeclaims", "nodepools"}, nil, func(c *cluster) { c.denied["list poddisruptionbudgets"] = true },
			"preflight: RBAC does not allow this controller to list poddisruptionbudgets.policy (grant the ClusterRole of the chart)", 7, 0},
		{"RBAC denies listing the placeholder's Events", []string{"nodeclaims", "nodepools"}, nil, func(c *cluster) { c.denied["list events"] = true },
			"preflight: RBAC does not allow this controller to list events in nrc (grant the Role of the chart)", 9, 0},
		{"the PriorityClass is missing", []string{"nodeclaims", "nodepools"}, nil, nil,
			`preflight: the placeholder PriorityClass "placeholder" is missing (install it with the chart): pods "nrc-preflight-" is forbidden: no PriorityClass with name placeholder was found`, 9, 1},
		{"a positive priority", []string{"nodeclaims", "nodepools"}, []*schedulingv1.PriorityClass{class(10, never)}, nil,
			`preflight: the placeholder PriorityClass "placeholder" has priority 10; it must be negative so workloads preempt the placeholder`, 9, 1},
		{"a zero priority", []string{"nodeclaims", "nodepools"}, []*schedulingv1.PriorityClass{class(0, never)}, nil,
			`has priority 0; it must be negative`, 9, 1},
		{"preemption of lower priorities", []string{"nodeclaims", "nodepools"}, []*schedulingv1.PriorityClass{class(-10, lower)}, nil,
			`preflight: the placeholder PriorityClass "placeholder" must set preemptionPolicy: Never`, 9, 1},
		{"no preemption policy", []string{"nodeclaims", "nodepools"}, []*schedulingv1.PriorityClass{class(-10, nil)}, nil,
			`must set preemptionPolicy: Never`, 9, 1},
		{"the namespace is missing", []string{"nodeclaims", "nodepools"}, nil, func(c *cluster) {
			c.podErr = apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "nrc")
		}, `preflight: resolving the placeholder PriorityClass "placeholder" with a dry-run Pod in nrc: namespaces "nrc" not found`, 9, 1},
		{"a non-API error mentioning PriorityClass", []string{"nodeclaims", "nodepools"}, nil, func(c *cluster) {
			c.podErr = errors.New("dial tcp: PriorityClass lookup failed")
		}, `preflight: resolving the placeholder PriorityClass "placeholder" with a dry-run Pod in nrc: dial tcp`, 9, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, tc.classes...)
			if tc.setup != nil {
				tc.setup(c)
			}
			err := Check(context.Background(), serveDiscovery(t, tc.resources...), c.client, "nrc", "placeholder")
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error = %v, want one line containing %q", err, tc.want)
			}
			if len(c.asked) != tc.asked || len(c.podDryRun) != tc.pods {
				t.Errorf("reviews %v and %d pod creates before failing, want %d and %d", c.asked, len(c.podDryRun), tc.asked, tc.pods)
			}
		})
	}
}

// noServiceAccount is the ServiceAccount admission plugin's refusal in a
// namespace whose default ServiceAccount the controller-manager has not
// created yet (as the kube-apiserver words it).
var noServiceAccount = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "nrc-preflight-",
	errors.New(`error looking up service account nrc/default: serviceaccount "default" not found`))

// A namespace created a moment before the controller started: the dry-run
// is tried again until its default ServiceAccount exists (the
// chart-identity e2e failed on this, 2026-12-07), and a namespace that
// never gets one fails naming it, after the wait.
func TestCheckWaitsForTheNamespacesServiceAccount(t *testing.T) {
	wait, poll := ServiceAccountWait, ServiceAccountPoll
	t.Cleanup(func() { ServiceAccountWait, ServiceAccountPoll = wait, poll })
	ServiceAccountWait, ServiceAccountPoll = 2*time.Second, 10*time.Millisecond

	c := newCluster(t, class(-10, ptr.To(corev1.PreemptNever)))
	c.podErrs = []error{noServiceAccount, noServiceAccount}
	if err := Check(context.Background(), serveDiscovery(t, "nodeclaims", "nodepools"), c.client, "nrc", "placeholder"); err != nil {
		t.Fatalf("preflight with the ServiceAccount created after two tries: %v", err)
	}
	if len(c.podDryRun) != 3 {
		t.Errorf("%d dry-run creates, want 3", len(c.podDryRun))
	}

	ServiceAccountWait = 100 * time.Millisecond
	c = newCluster(t, class(-10, ptr.To(corev1.PreemptNever)))
	c.podErr = noServiceAccount
	err := Check(context.Background(), serveDiscovery(t, "nodeclaims", "nodepools"), c.client, "nrc", "placeholder")
	if want := "preflight: the namespace nrc has no default ServiceAccount after 100ms"; err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error = %v, want one line containing %q", err, want)
	}
	if len(c.podDryRun) < 2 {
		t.Errorf("%d dry-run creates: the wait tried again none", len(c.podDryRun))
	}
}

func TestCheckCannotBuildDiscovery(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CAFile: "/nonexistent/ca.crt"}}
	err := Check(context.Background(), cfg, newCluster(t).client, "nrc", "placeholder")
	if err == nil || !strings.HasPrefix(err.Error(), "preflight: building a discovery client: ") {
		t.Errorf("error = %v", err)
	}
}

func TestDerefOr(t *testing.T) {
	if derefOr(nil) != 0 || derefOr(ptr.To(int32(-7))) != -7 {
		t.Error("derefOr")
	}
}
