package chart

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/action"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// warnings collects the API server's warnings (a deprecated API, an
// unknown field the server dropped, ...): a rendered object must draw none.
type warnings struct {
	mu   sync.Mutex
	seen []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}

// monitoringCRDs stand in for the Prometheus Operator's CRDs: they make
// the API server serve monitoring.coreos.com/v1 ServiceMonitors and
// PrometheusRules (their fields are checked by the strict decoding into
// the operator's Go types, in render).
func monitoringCRDs() []*apiextensionsv1.CustomResourceDefinition {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		plural := strings.ToLower(kind) + "s"
		out = append(out, &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".monitoring.coreos.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "monitoring.coreos.com",
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptrTo(true),
					}},
				}},
			},
		})
	}
	return out
}

func ptrTo[T any](v T) *T { return &v }

// TestServerSideDryRun renders the chart for a real API server — its
// Kubernetes version and the API versions it serves, as `helm install`
// does — and has the server validate every object with a dry-run create
// and strict field validation. Then it installs the RBAC for real and asks
// the server what the controller's ServiceAccount may do.
func TestServerSideDryRun(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set: the server-side dry-run needs kube-apiserver and etcd (`make test` sets it to $(test/world/testbin.sh path))")
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDInstallOptions: envtest.CRDInstallOptions{
			Paths: []string{chartDir + "/crds"}, ErrorIfPathMissing: true, CRDs: monitoringCRDs(),
		},
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest from %s: %v", assets, err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	warn := &warnings{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = warn
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		t.Fatal(err)
	}

	// The cluster's capabilities, as helm reads them.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	apis, err := action.GetVersionSet(dc)
	if err != nil {
		t.Fatal(err)
	}
	if !apis.Has(monitoringAPI) {
		t.Fatalf("the server does not serve %s: the stand-in CRDs were not installed", monitoringAPI)
	}
	caps := renderOpts{apiVersions: apis, kubeVersion: sv.GitVersion}

	c0 := loadChart(t)
	everything := []string{"metrics.auth=true", "serviceMonitor.enabled=true", "serviceMonitor.interval=30s",
		"prometheusRule.enabled=true", "grafanaDashboard.enabled=true", "imagePullSecrets[0].name=regcred",
		"tolerations[0].key=dedicated", "tolerations[0].operator=Exists", "nodeSelector.role=system",
		"topologySpreadConstraints[0].maxSkew=1", "topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone",
		"topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway", "defaultAffinity.spreadReplicas=required"}
	for _, sets := range [][]string{
		nil,
		everything,
		{"metrics.port=0", "serviceAccount.create=false", "serviceAccount.name=existing", "placeholderPriorityClass.create=false",
			"podDisruptionBudget.enabled=false", "defaultAffinity.avoidKarpenterNodes=false", "defaultAffinity.spreadReplicas=none"},
		podKnobs,
		// the extension points, and a ServiceMonitor verifying a mounted certificate
		{"fullnameOverride=rotator", "nameOverride=nrc-app", "commonLabels.team=platform", "image.digest=" + digest,
			"extraArgs[0]=-v=2", "env[0].name=HTTPS_PROXY", "env[0].value=http://proxy:3128",
			"extraVolumes[0].name=ca", "extraVolumes[0].configMap.name=corp-ca", "extraVolumeMounts[0].name=ca", "extraVolumeMounts[0].mountPath=/etc/corp-ca",
			"metrics.certSecret=nrc-metrics-tls", "serviceMonitor.enabled=true", "serviceMonitor.relabelings[0].targetLabel=cluster",
			"serviceMonitor.relabelings[0].replacement=prod", "serviceMonitor.metricRelabelings[0].sourceLabels[0]=__name__",
			"serviceMonitor.metricRelabelings[0].regex=go_.*", "serviceMonitor.metricRelabelings[0].action=drop", "prometheusRule.enabled=true"},
		{"metrics.secure=false", "serviceMonitor.enabled=true", "serviceAccount.annotations.example\\.com/role=nrc",
			"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=role",
			"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=In",
			"affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]=system"},
	} {
		r := mustRender(t, c0, caps, sets...)
		if strings.Contains(strings.Join(sets, " "), "serviceMonitor.enabled=true") && find[*monitoringv1.ServiceMonitor](t, r) == nil {
			t.Errorf("--set %v: no ServiceMonitor although the server serves %s", sets, monitoringAPI)
		}
		for _, o := range r.objects {
			u := &unstructured.Unstructured{}
			u.Object, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				t.Fatal(err)
			}
			u.SetGroupVersionKind(gvkOf(o))
			err := c.Create(ctx, u, client.DryRunAll, client.FieldValidation("Strict"))
			if err != nil {
				t.Errorf("--set %v: the server refuses %s %s: %v", sets, gvkOf(o).Kind, o.GetName(), err)
			}
			if w := warn.take(); len(w) > 0 {
				t.Errorf("--set %v: the server warns about %s %s: %q", sets, gvkOf(o).Kind, o.GetName(), w)
			}
		}
	}

	checkServiceAccountAccess(t, ctx, c, mustRender(t, c0, caps))
}

// checkServiceAccountAccess installs the ServiceAccount and its RBAC for
// real and asks the API server (SubjectAccessReview) what the controller
// may do: everything its code needs, where it needs it, and a sample of what
// it must not.
func checkServiceAccountAccess(t *testing.T, ctx context.Context, c client.Client, r *rendered) {
	for _, o := range r.objects {
		switch gvkOf(o).Kind {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			if err := c.Create(ctx, o); err != nil {
				t.Fatalf("creating %s %s: %v", gvkOf(o).Kind, o.GetName(), err)
			}
		}
	}
	type access struct{ verb, group, resource, subresource, ns string }
	allowed := []access{
		{"get", "karpenter.sh", "nodeclaims", "", ""}, {"list", "karpenter.sh", "nodeclaims", "", ""}, {"watch", "karpenter.sh", "nodeclaims", "", ""},
		{"patch", "karpenter.sh", "nodeclaims", "", ""}, {"delete", "karpenter.sh", "nodeclaims", "", ""},
		{"get", "karpenter.sh", "nodepools", "", ""}, {"list", "karpenter.sh", "nodepools", "", ""}, {"watch", "karpenter.sh", "nodepools", "", ""},
		{"patch", "karpenter.sh", "nodepools", "", ""},
		{"get", "", "nodes", "", ""}, {"list", "", "nodes", "", ""}, {"watch", "", "nodes", "", ""}, {"patch", "", "nodes", "", ""},
		{"list", "", "pods", "", ""}, // cluster-wide, by field selector
		{"list", "", "pods", "", namespace}, {"watch", "", "pods", "", namespace}, {"create", "", "pods", "", namespace}, {"delete", "", "pods", "", namespace},
		{"create", "", "events", "", "default"}, {"patch", "", "events", "", "default"}, {"create", "", "events", "", namespace},
		{"get", "coordination.k8s.io", "leases", "", namespace}, {"create", "coordination.k8s.io", "leases", "", namespace}, {"update", "coordination.k8s.io", "leases", "", namespace},
		{"get", "noderotation.io", "rotationpolicies", "", ""}, {"list", "noderotation.io", "rotationpolicies", "", ""}, {"watch", "noderotation.io", "rotationpolicies", "", ""},
		{"update", "noderotation.io", "rotationpolicies", "status", ""},
		{"create", "authorization.k8s.io", "selfsubjectaccessreviews", "", ""}, // preflight: every authenticated user may
		// metrics.auth, the default (test/chart/rbac_test.go: not without it)
		{"create", "authentication.k8s.io", "tokenreviews", "", ""}, {"create", "authorization.k8s.io", "subjectaccessreviews", "", ""},
	}
	denied := []access{
		{"create", "karpenter.sh", "nodeclaims", "", ""}, {"update", "karpenter.sh", "nodeclaims", "", ""},
		{"create", "karpenter.sh", "nodepools", "", ""}, {"delete", "karpenter.sh", "nodepools", "", ""},
		{"update", "", "nodes", "", ""}, {"delete", "", "nodes", "", ""},
		{"watch", "", "pods", "", ""}, {"get", "", "pods", "", "default"}, {"create", "", "pods", "", "default"}, {"delete", "", "pods", "", "default"},
		{"create", "", "pods", "eviction", "default"},
		{"get", "coordination.k8s.io", "leases", "", "kube-system"}, {"delete", "coordination.k8s.io", "leases", "", namespace},
		{"get", "", "secrets", "", namespace}, {"get", "scheduling.k8s.io", "priorityclasses", "", ""},
		{"create", "noderotation.io", "rotationpolicies", "", ""}, {"patch", "noderotation.io", "rotationpolicies", "", ""},
		{"patch", "noderotation.io", "rotationpolicies", "status", ""},
	}
	user := fmt.Sprintf("system:serviceaccount:%s:%s", namespace, releaseName)
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	may := func(a access) *authorizationv1.SubjectAccessReview {
		t.Helper()
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.ns},
		}}
		if err := c.Create(ctx, sar); err != nil {
			t.Fatal(err)
		}
		return sar
	}
	check := func(a access, want bool) {
		t.Helper()
		if sar := may(a); sar.Status.Allowed != want {
			t.Errorf("the ServiceAccount may %s %+v: %v, want %v (%s)", a.verb, a, sar.Status.Allowed, want, sar.Status.Reason)
		}
	}
	// The API server's RBAC authorizer learns of the new roles and
	// bindings from a watch of its own: a review sent right after they
	// were created can still be answered without them (CI, 2026-12-01:
	// the first allowed access refused, every later one granted).
	for deadline := time.Now().Add(10 * time.Second); !may(allowed[0]).Status.Allowed && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	for _, a := range allowed {
		check(a, true)
	}
	for _, a := range denied {
		check(a, false)
	}
}
