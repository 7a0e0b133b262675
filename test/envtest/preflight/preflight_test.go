// Package preflight_test runs internal/preflight against a real API server:
// first without Karpenter's CRDs, then with them, then as a restricted user.
// The fast unit tests beside the code use fake clients instead.
package preflight_test

import (
	"context"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	_ "github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/internal/preflight"
	"github.com/noderotation/node-rotation-controller/internal/scheme"
	"github.com/noderotation/node-rotation-controller/test/testenv"
)

// One real API server: first without Karpenter's CRDs, then with them.
func TestPreflight(t *testing.T) {
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets(t)}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "nrc"}}); err != nil {
		t.Fatal(err)
	}
	expect := func(want string) {
		t.Helper()
		err := preflight.Check(ctx, cfg, c, "nrc", "placeholder")
		if want == "" {
			if err != nil {
				t.Fatalf("preflight failed: %v", err)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("preflight error = %v, want one line containing %q", err, want)
		}
	}

	expect("the cluster does not serve karpenter.sh/v1")

	crds, err := testenv.KarpenterCRDPaths()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{Paths: crds}); err != nil {
		t.Fatal(err)
	}
	expect(`the placeholder PriorityClass "placeholder" is missing`)

	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "placeholder"}, Value: 10, PreemptionPolicy: ptr.To(corev1.PreemptNever)}
	if err := c.Create(ctx, pc); err != nil {
		t.Fatal(err)
	}
	expect(`has priority 10; it must be negative`)

	if err := c.Delete(ctx, pc); err != nil {
		t.Fatal(err)
	}
	pc = &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "placeholder"}, Value: -10, PreemptionPolicy: ptr.To(corev1.PreemptNever)}
	if err := c.Create(ctx, pc); err != nil {
		t.Fatal(err)
	}
	expect("")

	// An identity that may create pods but not read NodeClaims.
	user, err := env.AddUser(envtest.User{Name: "restricted"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "restricted"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"karpenter.sh"}, Resources: []string{"nodepools"}, Verbs: []string{"get", "list", "watch"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "restricted"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "restricted"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "restricted"}}}
	if err := c.Create(ctx, role); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, binding); err != nil {
		t.Fatal(err)
	}
	rc, err := client.New(user.Config(), client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	err = preflight.Check(ctx, user.Config(), rc, "nrc", "placeholder")
	if err == nil || !strings.Contains(err.Error(), "RBAC does not allow this controller to get nodeclaims.karpenter.sh") {
		t.Fatalf("restricted identity: %v", err)
	}
}

func assets(t *testing.T) string {
	t.Helper()
	a := os.Getenv("KUBEBUILDER_ASSETS")
	if a == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run through `make test`")
	}
	return a
}
