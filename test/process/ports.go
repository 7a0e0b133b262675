package process

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// handedOut holds every port FreePorts returned in this test process. The
// kernel picks a free port at random from the ephemeral range, so two calls
// a moment apart can return the same one before the first caller's process
// has bound it: CI lost a leader-election spec to that (2026-12-05: both
// replicas were given 127.0.0.1:38559, the second exited on the bind).
var (
	handedOutMu sync.Mutex
	handedOut   = map[int]bool{}
)

// FreePorts are n distinct loopback TCP ports free at the time of the call,
// for the controller's metrics and probe listeners, none of them returned
// before by this process.
func FreePorts(n int) ([]int, error) {
	handedOutMu.Lock()
	defer handedOutMu.Unlock()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	// Every listener stays open until the end, so a port the process had
	// before is skipped without the kernel offering it again in this call.
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("no loopback port this process has not used before after %d tries", tries)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(errors.New("no free loopback port"), err)
		}
		ls = append(ls, l)
		if p := l.Addr().(*net.TCPAddr).Port; !handedOut[p] {
			ports = append(ports, p)
		}
	}
	for _, p := range ports {
		handedOut[p] = true
	}
	return ports, nil
}

// ErrPortTaken is AwaitServing's answer when the run exited because one of
// its listeners' ports had been taken between FreePorts and the bind (by
// another test process, or a client connection's ephemeral port): the
// caller starts again on fresh ports.
var ErrPortTaken = errors.New("a listener's port was taken before the controller bound it")

// ServingLine is what the controller logs once its metrics listener is
// bound (controller-runtime's metrics server); the probe listener is bound
// before it, when the manager is made.
const ServingLine = "Serving metrics server"

// AwaitServing waits until the run's log holds line or the process exits:
// nil once the line is there, ErrPortTaken when the process exited on an
// address in use, another error when it exited otherwise or timeout passed.
func (c *Controller) AwaitServing(line string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if len(c.LogLines(line)) > 0 {
			return nil
		}
		if c.Exited() {
			if len(c.LogLines("address already in use")) > 0 {
				return ErrPortTaken
			}
			return fmt.Errorf("the run exited (%v) before logging %q", c.ExitErr(), line)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %q in the run's log after %s", line, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
