//go:build e2e

package chaos_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/noderotation/node-rotation-controller/test/fixtures"
	"github.com/noderotation/node-rotation-controller/test/process"
)

// controller runs the controller binary as a local process against the
// proxy, one process run at a time, each logging to its own file, and can
// SIGKILL it. It remembers every run: the invariant checker reads each
// run's log as one process's announcements.
type controller struct {
	dir string

	mu   sync.Mutex
	cur  *process.Controller // the running process run, nil between runs
	runs []*run
}

type run struct {
	*process.Controller
	killed bool // by us: SIGKILL
}

func newController() *controller {
	dir, err := os.MkdirTemp("", "nrc-chaos-")
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("controller logs in %s\n", dir)
	return &controller{dir: dir}
}

// start starts a new process run. Its listeners take fresh loopback ports
// (never one an earlier run of this process had), so a run cannot meet
// its killed predecessor's listeners. A port another test process takes
// before the bind ends the run by itself, which the spec reports: it is
// not retried here, since start holds c.mu, which a kill hook needs.
func (c *controller) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	Expect(c.cur == nil).To(BeTrue(), "a controller is already running")
	ports, err := process.FreePorts(2)
	Expect(err).NotTo(HaveOccurred())
	p, err := process.Start(binary, c.dir, fmt.Sprintf("run-%02d", len(c.runs)+1),
		"-kubeconfig", proxyKC, "-namespace", fixtures.ControllerNamespace,
		"-placeholder-priority-class", fixtures.PlaceholderPriorityClass, "-leader-elect=false", "-log-format=json",
		fmt.Sprintf("-metrics-bind-address=127.0.0.1:%d", ports[0]), "-metrics-secure=false",
		fmt.Sprintf("-health-probe-bind-address=127.0.0.1:%d", ports[1]),
		// as the chart's prePull.usePullSecrets: a policy's usePullSecrets
		// takes effect, the cache holds our Pods in every namespace
		"-prepull-use-pull-secrets")
	Expect(err).NotTo(HaveOccurred())
	c.cur = p
	c.runs = append(c.runs, &run{Controller: p})
}

// kill SIGKILLs the running process and waits until it is gone: when kill
// returns, the process can neither read an answer nor write anything more.
func (c *controller) kill() {
	c.mu.Lock()
	cur := c.cur
	if cur != nil {
		c.runs[len(c.runs)-1].killed = true
	}
	c.mu.Unlock()
	if cur == nil {
		return
	}
	cur.Kill()
	c.mu.Lock()
	c.cur = nil
	c.mu.Unlock()
}

// stop ends the running process cleanly (SIGTERM), SIGKILL after 15 s.
func (c *controller) stop() {
	c.mu.Lock()
	cur := c.cur
	c.mu.Unlock()
	if cur == nil {
		return
	}
	cur.Stop(15 * time.Second)
	c.mu.Lock()
	c.cur = nil
	c.mu.Unlock()
}

// running reports whether a process run is up; one that exited by itself
// (not killed by us) is an error with its log's tail.
func (c *controller) running() (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil {
		return false, nil
	}
	if c.runs[len(c.runs)-1].killed {
		return false, nil // being killed: not an exit by itself
	}
	if c.cur.Exited() {
		return false, fmt.Errorf("controller run %d (pid %d) exited by itself: %v\n%s", len(c.runs), c.cur.Pid(), c.cur.ExitErr(), c.cur.Tail(4000))
	}
	return true, nil
}

// alive fails the spec when the controller exited by itself.
func (c *controller) alive() {
	_, err := c.running()
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
}

// logs are the log files of every run so far, in order.
func (c *controller) logs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.runs))
	for i, r := range c.runs {
		out[i] = r.Log
	}
	return out
}

func (c *controller) kills() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.runs {
		if r.killed {
			n++
		}
	}
	return n
}

// tail is the last n bytes of the last two runs' logs: a kill's victim and
// its successor.
func (c *controller) tail(n int) string {
	c.mu.Lock()
	runs := c.runs[max(0, len(c.runs)-2):]
	c.mu.Unlock()
	var b strings.Builder
	for _, r := range runs {
		fmt.Fprintf(&b, "--- controller run %s ---\n%s\n", r.Log, r.Tail(n))
	}
	return b.String()
}
