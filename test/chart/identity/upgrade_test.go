//go:build e2e

package identity_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	policyCRD = "rotationpolicies.noderotation.io"
	// droppedField is what the older CRD lacks: a field of the spec the
	// chart's CRD has, so the upgrade is seen in the schema.
	droppedField = "prePull"
)

// repoRoot is the repository, from this package's directory.
var repoRoot = filepath.Join("..", "..", "..")

// chartCRD is the chart's RotationPolicy CRD (what `helm show crds` prints).
func chartCRD(t *testing.T) (*apiextensionsv1.CustomResourceDefinition, []byte) {
	t.Helper()
	chrt, err := loader.Load(filepath.Join(repoRoot, "charts", "node-rotation-controller"))
	must(t, err, "loading the chart")
	crds := chrt.CRDObjects()
	if len(crds) != 1 {
		t.Fatalf("the chart has %d CRDs, want the RotationPolicy's", len(crds))
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	must(t, yaml.Unmarshal(crds[0].File.Data, crd), "decoding the chart's CRD")
	return crd, crds[0].File.Data
}

// installOlderCRD stands for a cluster a release before this one was
// installed on: the RotationPolicy CRD without one spec field, created
// (not applied) as helm install creates it.
func (w *world) installOlderCRD(t *testing.T) {
	t.Helper()
	existing := &apiextensionsv1.CustomResourceDefinition{}
	if err := w.admin.Get(w.ctx, client.ObjectKey{Name: policyCRD}, existing); err == nil {
		must(t, w.admin.Delete(w.ctx, existing), "deleting the CRD an earlier run left")
		eventually(t, time.Minute, "the earlier CRD gone", func() (bool, error) {
			err := w.admin.Get(w.ctx, client.ObjectKey{Name: policyCRD}, &apiextensionsv1.CustomResourceDefinition{})
			return apierrors.IsNotFound(err), nil
		})
	}
	older, _ := chartCRD(t)
	spec := older.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	if _, ok := spec.Properties[droppedField]; !ok {
		t.Fatalf("the chart's CRD has no spec.%s to drop", droppedField)
	}
	delete(spec.Properties, droppedField)
	older.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	must(t, w.admin.Create(w.ctx, older), "creating the older CRD")
}

// upgradeCRDs: helm install (and upgrade) leave an existing CRD as it was;
// the documented upgrade (charts/node-rotation-controller/README.md,
// "Upgrading") is the chart's CRDs applied server-side, with no checkout:
// `helm show crds CHART | kubectl apply --server-side --force-conflicts -f -`.
func (w *world) upgradeCRDs(t *testing.T) {
	t.Helper()
	if w.hasField(t) {
		t.Fatalf("helm install replaced the existing CRD: the test's older CRD is not what a user upgrading has")
	}
	// `helm show crds CHART`: the Helm SDK's own show action
	show := action.NewShow(action.ShowCRDs, action.NewConfiguration())
	chartPath := filepath.Join(repoRoot, "charts", "node-rotation-controller")
	manifest, err := show.Run(chartPath)
	must(t, err, "helm show crds "+chartPath)
	if !strings.Contains(manifest, "name: "+policyCRD) {
		t.Fatalf("helm show crds printed no %s:\n%.300s", policyCRD, manifest)
	}
	kubectl := filepath.Join(w.testbin(t), "kubectl")
	cmd := exec.CommandContext(w.ctx, kubectl, "--kubeconfig", w.kubecfg, "apply", "--server-side", "--force-conflicts", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	must(t, err, "kubectl apply --server-side --force-conflicts of the chart's CRDs: "+string(out))
	t.Logf("CRD upgrade: %s", strings.TrimSpace(string(out)))
	eventually(t, 30*time.Second, "the CRD's schema upgraded", func() (bool, error) { return w.hasField(t), nil })
}

func (w *world) hasField(t *testing.T) bool {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	must(t, w.admin.Get(w.ctx, client.ObjectKey{Name: policyCRD}, crd), "reading the CRD")
	_, ok := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties[droppedField]
	return ok
}

// testbin is the directory of the cluster's binaries (kubectl among them).
func (w *world) testbin(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("bash", filepath.Join(repoRoot, "test", "world", "testbin.sh"), "path").Output()
	must(t, err, "test/world/testbin.sh path")
	return strings.TrimSpace(string(out))
}
