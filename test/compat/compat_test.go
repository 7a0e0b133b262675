// Package compat_test holds the controller's read and write paths to the
// karpenter.sh CRDs of every supported Karpenter version — the default and
// each version of the Makefile's KARPENTER_MATRIX — each version's CRDs
// read from its own module (fetched through the Go module proxy, nothing
// built) and installed into one envtest API server in turn, and, where its
// control plane is in the test-binary cache, on the Kubernetes minimum
// (docs/test-world.md, "CRD compatibility"). It builds nothing heavy, so
// every submission runs it for every version; the real-Karpenter rows of
// those versions run when their inputs change (test/world/proven.sh).
package compat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

// crdFiles are the CRDs of karpenter.sh the controller uses, as every
// supported version's module ships them.
var crdFiles = []string{"pkg/apis/crds/karpenter.sh_nodepools.yaml", "pkg/apis/crds/karpenter.sh_nodeclaims.yaml"}

func TestEveryKarpenterVersionsCRDsServeTheController(t *testing.T) {
	env, c := start(t, "")
	defer stop(t, env)
	for _, v := range karpenterVersions(t) {
		t.Run("karpenter-v"+v, func(t *testing.T) {
			dir := crdsOf(t, v)
			for _, p := range within(t, env, c, dir) {
				t.Errorf("Karpenter v%s: %s", v, p)
			}
		})
	}
}

// The Kubernetes minimum (the Makefile's KUBERNETES_MATRIX) serves the
// default Karpenter's CRDs to the controller: on its own kube-apiserver
// when the test-binary cache has it (testbin.sh kubernetes VERSION, which
// a cold machine has not built: that build is the release gate's, make
// test-matrix, and this says so rather than building it). make
// test-matrix runs it once its row has built that server, and requires it
// (NRC_COMPAT_REQUIRE_MINIMUM): there a missing server fails.
func TestTheKubernetesMinimumServesTheController(t *testing.T) {
	for _, v := range makeVariable(t, "KUBERNETES_MATRIX") {
		t.Run("kubernetes-v"+v, func(t *testing.T) {
			apiserver := filepath.Join(assets(t), "kube-apiserver-"+v)
			if _, err := os.Stat(apiserver); err != nil && os.Getenv("NRC_COMPAT_REQUIRE_MINIMUM") != "" {
				t.Fatalf("kube-apiserver %s is not in the test-binary cache (%s), and make test-matrix requires its check (NRC_COMPAT_REQUIRE_MINIMUM): its row builds it (test/world/testbin.sh kubernetes %s)", v, apiserver, v)
			} else if err != nil {
				t.Skipf("kube-apiserver %s is not in the test-binary cache (%s): its check is left to make test-matrix, which builds it (test/world/testbin.sh kubernetes %s)", v, apiserver, v)
			}
			env, c := start(t, apiserver)
			defer stop(t, env)
			for _, p := range within(t, env, c, crdsOf(t, defaultKarpenter(t))) {
				t.Errorf("Kubernetes v%s: %s", v, p)
			}
		})
	}
}

// within installs the CRDs in dir, runs the check and uninstalls them, so
// the next version starts from none.
func within(t *testing.T, env *envtest.Environment, c client.Client, dir string) []string {
	t.Helper()
	opts := envtest.CRDInstallOptions{Paths: []string{dir}, ErrorIfPathMissing: true}
	if _, err := envtest.InstallCRDs(env.Config, opts); err != nil {
		return []string{fmt.Sprintf("installing the CRDs of %s: %v", dir, err)}
	}
	defer func() {
		if err := envtest.UninstallCRDs(env.Config, opts); err != nil {
			t.Fatalf("uninstalling the CRDs of %s: %v", dir, err)
		}
		gone(t, env, c)
	}()
	return check(context.Background(), c)
}

// gone waits until the karpenter.sh CRDs are deleted and their group has
// left discovery: UninstallCRDs returns once the deletes are sent, and a
// CRD still terminating, or a discovery document still naming its group,
// would make the next version's install update the old one or time out
// waiting (both seen).
func gone(t *testing.T, env *envtest.Environment, c client.Client) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		left := 0
		for _, name := range []string{"nodepools.karpenter.sh", "nodeclaims.karpenter.sh"} {
			if err := c.Get(context.Background(), client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{}); !apierrors.IsNotFound(err) {
				left++
			}
		}
		if _, err := dc.ServerResourcesForGroupVersion("karpenter.sh/v1"); !apierrors.IsNotFound(err) {
			left++
		}
		if left == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the karpenter.sh CRDs were not gone from the API server 60 s after their delete")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func start(t *testing.T, apiserver string) (*envtest.Environment, client.Client) {
	t.Helper()
	logf.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	s, err := scheme.New()
	if err == nil {
		err = apiextensionsv1.AddToScheme(s) // gone reads the CRDs
	}
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets(t)}
	if apiserver != "" {
		env.ControlPlane.APIServer = &envtest.APIServer{Path: apiserver}
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		t.Fatalf("building a client: %v", err)
	}
	return env, c
}

func stop(t *testing.T, env *envtest.Environment) {
	if err := env.Stop(); err != nil {
		t.Errorf("stopping envtest: %v", err)
	}
}

func assets(t *testing.T) string {
	a := os.Getenv("KUBEBUILDER_ASSETS")
	if a == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run the tests through `make test`, which builds etcd and kube-apiserver into the test-binary cache")
	}
	return a
}

// crdsOf copies version v's CRD files out of its module (go mod download,
// outside this module, so go.mod is untouched) into a directory of their
// own.
func crdsOf(t *testing.T, v string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/karpenter@v"+v)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &mod); err != nil || jerr != nil || mod.Dir == "" {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		t.Fatalf("go mod download sigs.k8s.io/karpenter@v%s: %v %s", v, err, mod.Error)
	}
	dir := t.TempDir()
	for _, f := range crdFiles {
		b, err := os.ReadFile(filepath.Join(mod.Dir, f))
		if err != nil {
			t.Fatalf("Karpenter v%s ships no %s: %v", v, f, err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// karpenterVersions: the default Karpenter and the Makefile's matrix.
func karpenterVersions(t *testing.T) []string {
	return append([]string{defaultKarpenter(t)}, makeVariable(t, "KARPENTER_MATRIX")...)
}

func defaultKarpenter(t *testing.T) string {
	m := regexp.MustCompile(`(?m)^KARPENTER_VERSION=\$\{KARPENTER_VERSION:-([0-9.]+)\}$`).FindSubmatch(read(t, "../world/testbin.sh"))
	if m == nil {
		t.Fatal("test/world/testbin.sh has no KARPENTER_VERSION default")
	}
	return string(m[1])
}

// makeVariable: the words of the Makefile's NAME ?= line.
func makeVariable(t *testing.T, name string) []string {
	m := regexp.MustCompile(`(?m)^` + name + ` \?= (.+)$`).FindSubmatch(read(t, "../../Makefile"))
	if m == nil {
		t.Fatalf("the Makefile has no %s ?= line", name)
	}
	return strings.Fields(string(m[1]))
}

func read(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
