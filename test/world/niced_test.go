// Package world holds the tests of the test world: its scripts, and what
// keeps a cold run from compiling a package twice.
package world

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// niced.sh gives a build started in a session of its own the nice value it
// asks for twice: its processes' and its session's autogroup's. With
// autogroup scheduling on, a session's processes share the CPU with other
// sessions by the autogroup's nice alone, so without the second a "niced"
// build took as much CPU as make test (docs/test-world.md, "CI time").
func TestNicedLowersItsOwnSessionsAutogroup(t *testing.T) {
	out, err := exec.Command("setsid", "./niced.sh", "17", "sh", "-c",
		"cat /proc/self/autogroup 2>/dev/null; echo; ps -o ni= -p $$").CombinedOutput()
	if err != nil {
		t.Fatalf("niced.sh: %v\n%s", err, out)
	}
	// nice adds to the caller's own value, at most 19 (the raw system
	// call answers 20 - nice)
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.Itoa(min(20-raw+17, 19))
	if f := strings.Fields(string(out)); len(f) == 0 || f[len(f)-1] != want {
		t.Errorf("the command did not run at nice %s:\n%s", want, out)
	}
	if _, err := os.Stat("/proc/self/autogroup"); err != nil {
		return // no autogroup scheduling here: nothing more to lower
	}
	if !strings.Contains(string(out), " nice 17") {
		t.Errorf("its session's autogroup was not set to nice 17:\n%s", out)
	}
}

// Run by a process that does not lead its own session, niced.sh leaves
// the session it runs in alone: that one is its caller's.
func TestNicedLeavesItsCallersSessionAlone(t *testing.T) {
	before, err := os.ReadFile("/proc/self/autogroup")
	if err != nil {
		t.Skip("no autogroup scheduling here")
	}
	out, err := exec.Command("./niced.sh", "13", "cat", "/proc/self/autogroup").CombinedOutput()
	if err != nil {
		t.Fatalf("niced.sh: %v\n%s", err, out)
	}
	after, _ := os.ReadFile("/proc/self/autogroup")
	if string(out) != string(before) || string(after) != string(before) {
		t.Errorf("the caller's autogroup changed: before %q, the command saw %q, after %q", before, out, after)
	}
}
