//go:build e2e

package e2e_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/process"
	"github.com/noderotation/node-rotation-controller/test/testenv"
)

// logDir keeps every controller run's log; a failing spec prints the tail.
var logDir = filepath.Join(os.TempDir(), "node-rotation-controller-e2e")

// installPrerequisites applies our CRD, the controller's namespace and the
// placeholder PriorityClass, as the chart does.
func installPrerequisites(ctx context.Context) {
	root, err := testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	c := &fixtures.Cluster{Config: restConfig, Client: kube, Watcher: watcher}
	Expect(c.InstallPrerequisites(ctx, root, fixtures.ControllerNamespace, fixtures.PlaceholderPriorityClass)).To(Succeed())
}

// controller is one run of the real controller binary ($NRC_CONTROLLER_BIN,
// the binary taken out of the image, or one built from this checkout)
// against the local cluster, its listeners on free loopback ports, metrics
// over plain HTTP so the spec can read them.
type controller struct {
	*process.Controller
	metricsPort int
}

// startController runs the controller named name (its log file) with the
// flags every e2e run shares plus extra (later flags win).
func startController(name string, extra ...string) *controller {
	root, err := testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	bin, err := process.Binary(root, logDir)
	Expect(err).NotTo(HaveOccurred())
	return startBinary(bin, name, extra...)
}

// startBinary runs bin as startController runs this checkout's controller.
// A run that lost a listener's port to another process between FreePorts
// and its bind is started again on fresh ports.
func startBinary(bin, name string, extra ...string) *controller {
	for attempt := 1; ; attempt++ {
		ports, err := process.FreePorts(2)
		Expect(err).NotTo(HaveOccurred())
		args := append([]string{"-kubeconfig", os.Getenv("KUBECONFIG"), "-namespace", fixtures.ControllerNamespace,
			"-placeholder-priority-class", fixtures.PlaceholderPriorityClass, "-leader-elect=false", "-log-format=json",
			fmt.Sprintf("-metrics-bind-address=127.0.0.1:%d", ports[0]), "-metrics-secure=false",
			fmt.Sprintf("-health-probe-bind-address=127.0.0.1:%d", ports[1])}, extra...)
		p, err := process.Start(bin, logDir, name, args...)
		Expect(err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("controller %s: %s pid %d, log %s\n", name, bin, p.Pid(), p.Log)
		c := &controller{Controller: p, metricsPort: ports[0]}
		DeferCleanup(c.stop)
		// Any other early exit is the spec's to judge from the log.
		err = p.AwaitServing(process.ServingLine, 30*time.Second)
		if errors.Is(err, process.ErrPortTaken) && attempt < 3 {
			GinkgoWriter.Printf("controller %s: %v; starting it again\n", name, err)
			continue
		}
		if err != nil {
			GinkgoWriter.Printf("controller %s: %v\n", name, err)
		}
		return c
	}
}

// stop ends the run with SIGTERM (SIGKILL after 15 s) and, when the spec
// failed, prints the log's tail.
func (c *controller) stop() {
	c.Stop(15 * time.Second)
	if CurrentSpecReport().Failed() {
		GinkgoWriter.Printf("--- controller log (%s) ---\n%s\n", c.Log, c.Tail(12000))
	}
}

// metric is the value of the series name{nodepool="pool",...} on the
// controller's metrics endpoint whose labels include every label in match
// (`key="value"` strings); -1 when the series is absent.
func (c *controller) metric(name string, match ...string) float64 {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", c.metricsPort))
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		ok := true
		for _, m := range match {
			ok = ok && strings.Contains(line, m)
		}
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err == nil {
			return v
		}
	}
	return -1
}

// completions counts the run's "rotation complete" log lines for claim.
func (c *controller) completions(claim string) int {
	n := 0
	for _, l := range c.LogLines(`"rotation complete"`) {
		if strings.Contains(l, claim) {
			n++
		}
	}
	return n
}
