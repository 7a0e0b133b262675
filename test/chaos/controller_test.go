//go:build e2e

package chaos_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// controller runs the controller binary as a local process against the
// proxy, one process run at a time, each logging to its own file, and can
// SIGKILL it. It remembers every run: the invariant checker reads each
// run's log as one process's announcements.
type controller struct {
	dir string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current run's process exited
	runs []*run
}

type run struct {
	log    string
	pid    int
	killed bool // by us: SIGKILL
	exit   error
}

func newController() *controller {
	dir, err := os.MkdirTemp("", "nrc-chaos-")
	Expect(err).NotTo(HaveOccurred())
	GinkgoWriter.Printf("controller logs in %s\n", dir)
	return &controller{dir: dir}
}

// freePort asks the kernel for a loopback port nobody listens on.
func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

// start starts a new process run. Its listeners take free loopback ports:
// a killed run's ports are free again at once, but fresh ones never race
// another suite's controller either.
func (c *controller) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	Expect(c.cmd == nil).To(BeTrue(), "a controller is already running")
	r := &run{log: filepath.Join(c.dir, fmt.Sprintf("run-%02d.log", len(c.runs)+1))}
	f, err := os.Create(r.log)
	Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(binary, "-kubeconfig", proxyKC, "-namespace", controllerNS,
		"-placeholder-priority-class", priorityClass, "-leader-elect=false", "-log-format=json",
		"-metrics-bind-address="+freePort(), "-metrics-secure=false", "-health-probe-bind-address="+freePort())
	cmd.Stdout, cmd.Stderr = f, f
	Expect(cmd.Start()).To(Succeed())
	r.pid = cmd.Process.Pid
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		_ = f.Close()
		c.mu.Lock()
		r.exit = err
		c.mu.Unlock()
		close(done)
	}()
	c.cmd, c.done = cmd, done
	c.runs = append(c.runs, r)
}

// kill SIGKILLs the running process and waits until it is gone: when kill
// returns, the process can neither read an answer nor write anything more.
func (c *controller) kill() {
	c.mu.Lock()
	cmd, done := c.cmd, c.done
	if cmd != nil {
		c.runs[len(c.runs)-1].killed = true
	}
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
	c.mu.Lock()
	c.cmd, c.done = nil, nil
	c.mu.Unlock()
}

// stop ends the running process with SIGINT (a clean stop), SIGKILL after 15 s.
func (c *controller) stop() {
	c.mu.Lock()
	cmd, done := c.cmd, c.done
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	c.mu.Lock()
	c.cmd, c.done = nil, nil
	c.mu.Unlock()
}

// running reports whether a process run is up; one that exited by itself
// (not killed by us) is an error with its log's tail.
func (c *controller) running() (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return false, nil
	}
	select {
	case <-c.done:
		r := c.runs[len(c.runs)-1]
		return false, fmt.Errorf("controller run %d (pid %d) exited by itself: %v\n%s", len(c.runs), r.pid, r.exit, tailOf(r.log, 4000))
	default:
		return true, nil
	}
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
		out[i] = r.log
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
	logs := c.logs()
	var b strings.Builder
	for i := max(0, len(logs)-2); i < len(logs); i++ {
		fmt.Fprintf(&b, "--- controller run %d (%s) ---\n%s\n", i+1, logs[i], tailOf(logs[i], n))
	}
	return b.String()
}

func tailOf(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
