package envtest_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/noderotation/node-rotation-controller/test/testenv"
)

// env is the real kube-apiserver + etcd every spec of this suite talks to.
var env *testenv.Env

func TestEnvtest(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "envtest suite")
}

var _ = BeforeSuite(func() {
	var err error
	env, err = testenv.Start("config/crd")
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
