package process

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStopEndsAProcessThatHonoursSIGTERM(t *testing.T) {
	c, err := Start("/bin/sh", t.TempDir(), "term", "-c", `trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.1; done`)
	if err != nil {
		t.Fatal(err)
	}
	waitForLine(t, c, "ready")
	if !c.Stop(10 * time.Second) {
		t.Fatal("Stop reported a SIGKILL for a process that exits on SIGTERM")
	}
	if !c.Exited() || len(c.LogLines("bye")) != 1 {
		t.Fatalf("exited=%v, log:\n%s", c.Exited(), c.Tail(1000))
	}
}

func TestStopKillsAProcessThatIgnoresSIGTERM(t *testing.T) {
	c, err := Start("/bin/sh", t.TempDir(), "stubborn", "-c", `trap '' TERM; echo ready; while :; do sleep 0.1; done`)
	if err != nil {
		t.Fatal(err)
	}
	waitForLine(t, c, "ready")
	if c.Stop(300 * time.Millisecond) {
		t.Fatal("Stop reported a clean exit for a process that ignores SIGTERM")
	}
	if !c.Exited() {
		t.Fatal("the process survived Stop")
	}
}

// The flags of NRC_CONTROLLER_ARGS come after a run's own.
func TestArgsFromTheEnvironmentComeLast(t *testing.T) {
	t.Setenv(ArgsEnv, " -b=2  -c ")
	c, err := Start("/bin/sh", t.TempDir(), "args", "-c", `echo "args: $*"`, "sh", "-a=1")
	if err != nil {
		t.Fatal(err)
	}
	waitForLine(t, c, "args:")
	if got := c.LogLines("args:"); len(got) != 1 || !strings.HasSuffix(got[0], "args: -a=1 -b=2 -c") {
		t.Errorf("log lines %q, want the run's own flag, then the environment's", got)
	}
}

func TestKillEndsTheProcessAtOnce(t *testing.T) {
	c, err := Start("/bin/sh", t.TempDir(), "kill", "-c", `trap 'echo term' TERM; echo ready; while :; do sleep 0.1; done`)
	if err != nil {
		t.Fatal(err)
	}
	waitForLine(t, c, "ready")
	c.Kill()
	if !c.Exited() || len(c.LogLines("term")) != 0 {
		t.Fatalf("Kill should end the process without a SIGTERM: exited=%v log %q", c.Exited(), c.Tail(200))
	}
	if err := c.ExitErr(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("ExitErr() = %v, want the SIGKILL", err)
	}
}

func TestBinaryPrefersTheEnvironment(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "ctrl")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(BinaryEnv, bin)
	got, err := Binary("/nonexistent", t.TempDir())
	if err != nil || got != bin {
		t.Fatalf("Binary() = %q, %v; want %q", got, err, bin)
	}
	t.Setenv(BinaryEnv, filepath.Join(t.TempDir(), "missing"))
	if _, err := Binary("/nonexistent", t.TempDir()); err == nil || !strings.Contains(err.Error(), BinaryEnv) {
		t.Fatalf("a missing %s binary should be an error naming it, got %v", BinaryEnv, err)
	}
}

func waitForLine(t *testing.T, c *Controller, line string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(c.LogLines(line)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", line, c.Tail(1000))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
