//go:build e2e

// Package chaos_test holds the chaos suites (docs/test-world.md#chaos-suites-testchaos):
// the crash campaign, which SIGKILLs the real controller right after each
// write of a rotation and restarts it, and the fault run, which fails a
// share of its API requests. Both run the controller as a local process
// behind test/apiproxy against the local cluster with real Karpenter, and
// judge the outcome with test/invariants.
package chaos_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/test/apiproxy"
	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/process"
	"github.com/noderotation/node-rotation-controller/test/testenv"
)

// Shared by the suites: clients of the local cluster (the admin's, never
// through the proxy), the controller binary, and the proxy it talks to.
var (
	kube       client.Client
	watcher    client.WithWatch
	restConfig *rest.Config
	binary     string
	proxy      *apiproxy.Proxy
	proxyKC    string // the controller's kubeconfig: the proxy's address
)

func TestChaos(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "chaos suites (controller behind a killing, faulting API proxy; local cluster with real Karpenter + kwok)")
}

var _ = BeforeSuite(func(ctx SpecContext) {
	Expect(fixtures.RequireBootDelay(8000)).To(Succeed())
	c, err := fixtures.Connect(os.Getenv("KUBECONFIG"))
	Expect(err).NotTo(HaveOccurred())
	kube, watcher, restConfig = c.Client, c.Watcher, c.Config
	root, err := testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	Expect(c.InstallPrerequisites(ctx, root, fixtures.ControllerNamespace, fixtures.PlaceholderPriorityClass)).To(Succeed())

	start := time.Now()
	binary, err = process.Binary(root, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("controller binary %s (%s)\n", binary, time.Since(start).Round(time.Second))

	proxy, err = apiproxy.Start(restConfig, "")
	Expect(err).NotTo(HaveOccurred())
	proxyKC = filepath.Join(GinkgoT().TempDir(), "proxy.kubeconfig")
	Expect(proxy.WriteKubeconfig(proxyKC)).To(Succeed())
	GinkgoWriter.Printf("API proxy %s → %s\n", proxy.URL(), restConfig.Host)
	DeferCleanup(func() { _ = proxy.Close() })
}, NodeTimeout(5*time.Minute))

// background is the context of cleanups that must run even when the spec's
// context is done.
func background() context.Context { return context.Background() }
