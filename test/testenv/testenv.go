// Package testenv starts a real kube-apiserver and etcd through
// controller-runtime's envtest, with the binaries that test/world/testbin.sh
// builds from Go modules and the Karpenter CRDs read from the module cache.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

// Env is a running API server with a client that knows our scheme.
type Env struct {
	env    *envtest.Environment
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
}

// Start brings up kube-apiserver + etcd and installs the Karpenter CRDs plus
// the CRDs found in extraCRDDirs (paths relative to the repository root).
func Start(extraCRDDirs ...string) (*Env, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests through `make test`, which builds etcd and kube-apiserver into the test-binary cache")
	}
	crds, err := KarpenterCRDPaths()
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	for _, d := range extraCRDDirs {
		crds = append(crds, filepath.Join(root, d))
	}
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDInstallOptions:     envtest.CRDInstallOptions{Paths: crds, ErrorIfPathMissing: true, Scheme: s},
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting envtest from %s: %w", assets, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("building client: %w", err)
	}
	return &Env{env: env, Config: cfg, Client: c, Scheme: s}, nil
}

// Stop shuts the API server and etcd down.
func (e *Env) Stop() error { return e.env.Stop() }

// KarpenterCRDPaths returns the karpenter.sh CRD files of the Karpenter module
// this repository builds against, straight from the module cache, so the CRDs
// under test are always the ones that match the Go types.
func KarpenterCRDPaths() ([]string, error) {
	dir, err := moduleDir("sigs.k8s.io/karpenter")
	if err != nil {
		return nil, err
	}
	return []string{
		filepath.Join(dir, "pkg/apis/crds/karpenter.sh_nodepools.yaml"),
		filepath.Join(dir, "pkg/apis/crds/karpenter.sh_nodeclaims.yaml"),
	}, nil
}

func moduleDir(module string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		return "", fmt.Errorf("locating module %s with `go list -m`: %w", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("module %s has no directory in the module cache; run `go mod download`", module)
	}
	return dir, nil
}

// RepoRoot is the directory holding go.mod.
func RepoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("locating go.mod: %w", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out))), nil
}
