package chart

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// crds/ is a copy of config/crd (go generate ./api/... writes both): the
// same files, byte for byte, so the chart installs the CRD the code was
// generated with.
func TestCRDsMatchConfig(t *testing.T) {
	config, chart := "../../config/crd", chartDir+"/crds"
	names := func(dir string) []string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil || len(m) == 0 {
			t.Fatalf("%s: no CRDs (%v)", dir, err)
		}
		for i := range m {
			m[i] = filepath.Base(m[i])
		}
		return m
	}
	if c, h := names(config), names(chart); !slices.Equal(c, h) {
		t.Fatalf("config/crd has %v, the chart's crds/ has %v: run `go generate ./api/...`", c, h)
	}
	for _, n := range names(config) {
		want, err := os.ReadFile(filepath.Join(config, n))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chart, n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("crds/%s differs from config/crd/%s: run `go generate ./api/...`", n, n)
		}
	}
}

// Helm renders the CRDs with the templates (--include-crds) as strict
// CustomResourceDefinitions, and `kubectl get rotpol` works.
func TestCRDsRender(t *testing.T) {
	r := mustRender(t, loadChart(t), renderOpts{includeCRDs: true})
	crd := find[*apiextensionsv1.CustomResourceDefinition](t, r)
	if crd == nil || crd.Name != "rotationpolicies.noderotation.io" || crd.Spec.Scope != apiextensionsv1.ClusterScoped {
		t.Fatalf("CRD = %+v", crd)
	}
	if !slices.Contains(crd.Spec.Names.ShortNames, "rotpol") {
		t.Errorf("short names %v lack rotpol (NOTES.txt and the README use it)", crd.Spec.Names.ShortNames)
	}
	// `kubectl get rotpol` must tell a policy that can never start
	// (Ready, but Feasible False) from one that can.
	cols := map[string]string{}
	for _, v := range crd.Spec.Versions {
		for _, c := range v.AdditionalPrinterColumns {
			cols[c.Name] = c.JSONPath
		}
	}
	for name, path := range map[string]string{
		"Ready":    `.status.conditions[?(@.type=="Ready")].reason`,
		"Feasible": `.status.conditions[?(@.type=="Feasible")].status`,
	} {
		if cols[name] != path {
			t.Errorf("printer column %s = %q, want %q (all columns: %v)", name, cols[name], path, cols)
		}
	}
}
