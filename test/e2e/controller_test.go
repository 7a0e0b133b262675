//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/noderotation/node-rotation-controller/test/testenv"
)

const (
	controllerNS  = "node-rotation-system"
	priorityClass = "node-rotation-placeholder"
)

// controllerProcess is the real controller binary, run as a local process
// against the local cluster, its listeners on 127.0.0.1.
type controllerProcess struct {
	cmd *exec.Cmd
	log string
}

// installController applies our CRD, namespace and PriorityClass, builds the
// controller and starts it.
func installController(ctx context.Context) *controllerProcess {
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
	dir := GinkgoT().TempDir()
	bin := filepath.Join(dir, "node-rotation-controller")
	build := exec.Command("go", "build", "-o", bin, "./cmd/node-rotation-controller")
	build.Dir = root
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))

	p := &controllerProcess{log: filepath.Join(os.TempDir(), fmt.Sprintf("node-rotation-controller-e2e-%d.log", time.Now().Unix()))}
	f, err := os.Create(p.log)
	Expect(err).NotTo(HaveOccurred())
	p.cmd = exec.Command(bin, "-kubeconfig", os.Getenv("KUBECONFIG"), "-namespace", controllerNS,
		"-placeholder-priority-class", priorityClass, "-leader-elect=false", "-log-format=text",
		"-metrics-bind-address=127.0.0.1:18443", "-health-probe-bind-address=127.0.0.1:18444")
	p.cmd.Stdout, p.cmd.Stderr = f, f
	Expect(p.cmd.Start()).To(Succeed())
	GinkgoWriter.Printf("controller pid %d, log %s\n", p.cmd.Process.Pid, p.log)
	return p
}

func (p *controllerProcess) stop() {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	if CurrentSpecReport().Failed() {
		if b, err := os.ReadFile(p.log); err == nil {
			GinkgoWriter.Printf("--- controller log (%s) ---\n%s\n", p.log, tail(string(b), 12000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
