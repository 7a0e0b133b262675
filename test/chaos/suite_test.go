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
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/noderotation/node-rotation-controller/internal/scheme"
	"github.com/noderotation/node-rotation-controller/test/apiproxy"
	"github.com/noderotation/node-rotation-controller/test/testenv"
)

const (
	controllerNS  = "node-rotation-system"
	priorityClass = "node-rotation-placeholder"
	// binaryEnv names a controller binary to run instead of building one
	// (the Makefile passes the one taken out of the image).
	binaryEnv = "NRC_CONTROLLER_BIN"
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
	path := os.Getenv("KUBECONFIG")
	Expect(path).NotTo(BeEmpty(), "KUBECONFIG must name the local cluster's kubeconfig (test/world/cluster.sh up prints it)")
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	Expect(err).NotTo(HaveOccurred())
	s, err := scheme.New()
	Expect(err).NotTo(HaveOccurred())
	kube, err = client.New(cfg, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	watcher, err = client.NewWithWatch(cfg, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	restConfig = cfg

	root, err := testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	_, err = envtest.InstallCRDs(restConfig, envtest.CRDInstallOptions{Paths: []string{filepath.Join(root, "config/crd")}})
	Expect(err).NotTo(HaveOccurred())
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: priorityClass}, Value: -10, PreemptionPolicy: ptr.To(corev1.PreemptNever)}
	if err := kube.Create(ctx, pc); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}

	binary = os.Getenv(binaryEnv)
	if binary == "" {
		binary = filepath.Join(GinkgoT().TempDir(), "node-rotation-controller")
		start := time.Now()
		build := exec.Command("go", "build", "-o", binary, "./cmd/node-rotation-controller")
		build.Dir = root
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		GinkgoWriter.Printf("built the controller in %s\n", time.Since(start).Round(time.Second))
	} else {
		binary, err = filepath.Abs(binary)
		Expect(err).NotTo(HaveOccurred())
		Expect(binary).To(BeAnExistingFile(), "%s names no binary", binaryEnv)
	}

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
