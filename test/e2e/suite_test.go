//go:build e2e

package e2e_test

import (
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/internal/scheme"
)

// kube talks to the local cluster test/world/cluster.sh brought up.
var (
	kube       client.Client
	watcher    client.WithWatch
	restConfig *rest.Config
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "e2e suite (local cluster with real Karpenter + kwok)")
}

var _ = BeforeSuite(func() {
	path := os.Getenv("KUBECONFIG")
	Expect(path).NotTo(BeEmpty(), "KUBECONFIG must name the local cluster's kubeconfig: run through `make test-e2e`")
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	Expect(err).NotTo(HaveOccurred())
	s, err := scheme.New()
	Expect(err).NotTo(HaveOccurred())
	kube, err = client.New(cfg, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	watcher, err = client.NewWithWatch(cfg, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
	restConfig = cfg
})
