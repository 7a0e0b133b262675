package compat_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The check fails when a version's CRD drops a field the controller
// uses. The mutations: the default Karpenter's CRDs with one field taken
// out of the schema — a NodeClaim's spec.expireAfter (read by the census
// for every claim), a NodePool's spec.template.spec.terminationGracePeriod
// (the drain's grace) and a NodeClaim's status.nodeName (the claim's
// Node) — as a version that dropped or renamed it would ship them. Each
// must fail the check and name the field.
func TestTheCheckFailsOnACRDWithoutAFieldTheControllerUses(t *testing.T) {
	env, c := start(t, "")
	defer stop(t, env)
	base := crdsOf(t, defaultKarpenter(t))
	if p := within(t, env, c, base); len(p) > 0 {
		t.Fatalf("the unmutated CRDs fail the check, so the mutations prove nothing: %v", p)
	}
	for _, m := range []struct {
		file string
		path []string
		want string
	}{
		{"karpenter.sh_nodeclaims.yaml", []string{"spec", "expireAfter"}, "NodeClaim compat-claim: spec.expireAfter was pruned"},
		{"karpenter.sh_nodepools.yaml", []string{"spec", "template", "spec", "terminationGracePeriod"}, "NodePool compat: spec.template.spec.terminationGracePeriod was pruned"},
		{"karpenter.sh_nodeclaims.yaml", []string{"status", "nodeName"}, "NodeClaim compat-claim: status.nodeName was pruned"},
	} {
		t.Run(strings.Join(m.path, "."), func(t *testing.T) {
			dir := mutated(t, base, m.file, m.path)
			problems := within(t, env, c, dir)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, m.want) }) {
				t.Errorf("with %s removed from %s the check reported %q, want a problem starting %q", strings.Join(m.path, "."), m.file, problems, m.want)
			}
		})
	}
}

// mutated copies the CRDs of base into a new directory with path removed
// from file's schema (every served version), and from the required list
// and any CEL rule of its parent that names it.
func mutated(t *testing.T, base, file string, path []string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range crdFiles {
		name := filepath.Base(f)
		b := read(t, filepath.Join(base, name))
		if name == file {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.Unmarshal(b, crd); err != nil {
				t.Fatal(err)
			}
			for i := range crd.Spec.Versions {
				remove(t, crd.Spec.Versions[i].Schema.OpenAPIV3Schema, path)
			}
			var err error
			if b, err = yaml.Marshal(crd); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// remove deletes path from s, and drops every CEL rule along it that
// names the removed field (a rule on a field the schema no longer has
// does not compile) and the field from its parent's required list.
func remove(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path []string) {
	leaf := path[len(path)-1]
	s.XValidations = slices.DeleteFunc(s.XValidations, func(r apiextensionsv1.ValidationRule) bool { return strings.Contains(r.Rule, leaf) })
	if len(path) == 1 {
		if _, ok := s.Properties[leaf]; !ok {
			t.Fatalf("the schema has no %s", leaf)
		}
		delete(s.Properties, leaf)
		s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == leaf })
		return
	}
	child, ok := s.Properties[path[0]]
	if !ok {
		t.Fatalf("the schema has no %s", path[0])
	}
	remove(t, &child, path[1:])
	s.Properties[path[0]] = child
}
