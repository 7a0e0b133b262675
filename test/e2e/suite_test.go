//go:build e2e

package e2e_test

import (
	"os"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/noderotation/node-rotation-controller/test/fixtures"
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
	c, err := fixtures.Connect(os.Getenv("KUBECONFIG"))
	Expect(err).NotTo(HaveOccurred())
	kube, watcher, restConfig = c.Client, c.Watcher, c.Config
})
