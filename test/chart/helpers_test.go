package chart

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/strvals"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	chartDir    = "../../charts/node-rotation-controller"
	releaseName = "nrc"
	namespace   = "node-rotation-system"
	// monitoringAPI is the API version the ServiceMonitor and the
	// PrometheusRule are gated on (.Capabilities.APIVersions.Has).
	monitoringAPI = "monitoring.coreos.com/v1"
)

// loadChart loads the chart from its directory, as `helm install
// charts/node-rotation-controller` does.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading the chart: %v", err)
	}
	return c
}

// setValues parses --set expressions (helm's strvals) into a values map,
// so a case reads as the command line it stands for.
func setValues(t *testing.T, sets ...string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	for _, s := range sets {
		if err := strvals.ParseInto(s, vals); err != nil {
			t.Fatalf("--set %s: %v", s, err)
		}
	}
	return vals
}

// renderOpts are the cluster the chart is rendered for.
type renderOpts struct {
	// apiVersions are extra API versions the cluster serves (Capabilities).
	apiVersions []string
	// kubeVersion is the cluster's Kubernetes version as its /version
	// endpoint says it (default v1.37.2, the test world's).
	kubeVersion string
	includeCRDs bool
}

// rendered is one `helm install --dry-run` (client only) of the chart.
type rendered struct {
	manifest string
	notes    string
	objects  []client.Object
}

// render installs the chart in client-only dry-run mode — `helm template`:
// the schema is validated, kubeVersion checked, templates and NOTES.txt
// rendered — and decodes every object strictly into its Go type.
func render(t *testing.T, c *chart.Chart, vals map[string]any, o renderOpts) (*rendered, error) {
	t.Helper()
	install := action.NewInstall(action.NewConfiguration(action.ConfigurationSetLogger(slog.NewTextHandler(testLog{t}, nil))))
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = releaseName
	install.Namespace = namespace
	install.IncludeCRDs = o.includeCRDs
	install.APIVersions = o.apiVersions
	kv := o.kubeVersion
	if kv == "" {
		// The SDK's own default is its client-go's version (the helm
		// binary stamps one in at build time): the Kubernetes of
		// test/world/testbin.sh instead.
		kv = "v1.37.2"
	}
	var err error
	if install.KubeVersion, err = common.ParseKubeVersion(kv); err != nil {
		t.Fatalf("kube version %q: %v", kv, err)
	}
	out, err := install.Run(c, vals)
	if err != nil {
		return nil, err
	}
	rel, ok := out.(*releasev1.Release)
	if !ok {
		t.Fatalf("the install returned a %T, not a v1 release", out)
	}
	r := &rendered{manifest: rel.Manifest, notes: rel.Info.Notes}
	for _, m := range releaseutil.SplitManifests(rel.Manifest) {
		obj, err := decodeStrict([]byte(m))
		if err != nil {
			t.Fatalf("a rendered object does not decode strictly into its Go type: %v\n%s", err, m)
		}
		if obj == nil {
			continue
		}
		r.objects = append(r.objects, obj)
	}
	if len(rel.Hooks) > 0 {
		t.Fatalf("the chart renders %d hooks; it has none", len(rel.Hooks))
	}
	return r, nil
}

// testLog writes the SDK's log lines into the test's log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// mustRender is render for values that must be accepted.
func mustRender(t *testing.T, c *chart.Chart, o renderOpts, sets ...string) *rendered {
	t.Helper()
	r, err := render(t, c, setValues(t, sets...), o)
	if err != nil {
		t.Fatalf("--set %v: %v", sets, err)
	}
	return r
}

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, monitoringv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// strict decodes YAML into the registered Go type of its kind, refusing
// unknown and duplicate fields.
var strict = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})

// decodeStrict returns nil for a document with no object (only comments).
func decodeStrict(doc []byte) (client.Object, error) {
	if len(bytes.TrimSpace(stripComments(doc))) == 0 {
		return nil, nil
	}
	obj, gvk, err := strict.Decode(doc, nil, nil)
	if err != nil {
		return nil, err
	}
	co, ok := obj.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", gvk)
	}
	co.GetObjectKind().SetGroupVersionKind(*gvk)
	return co, nil
}

func stripComments(doc []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(l), []byte("#")) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// kinds lists "Kind/name" of every object, sorted.
func (r *rendered) kinds() []string {
	var out []string
	for _, o := range r.objects {
		out = append(out, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
	}
	slices.Sort(out)
	return out
}

// find returns the one object of type T (nil if none; fails on several).
func find[T client.Object](t *testing.T, r *rendered) T {
	t.Helper()
	var zero, found T
	n := 0
	for _, o := range r.objects {
		if v, ok := o.(T); ok {
			found = v
			n++
		}
	}
	switch n {
	case 0:
		return zero
	case 1:
		return found
	}
	t.Fatalf("%d objects of type %T rendered, want at most one", n, zero)
	return zero
}

func gvkOf(o client.Object) schema.GroupVersionKind { return o.GetObjectKind().GroupVersionKind() }

func containsAll(t *testing.T, what, text string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, text)
		}
	}
}
