// Package process runs the real controller binary as a local process for
// the suites on the local cluster: the binary taken out of the image when
// NRC_CONTROLLER_BIN names it (make test-all sets it after make image), or
// one built from this checkout. Each run logs to its own file, which a
// failing suite prints.
package process

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BinaryEnv names the controller binary to run instead of building one.
const BinaryEnv = "NRC_CONTROLLER_BIN"

// ArgsEnv holds flags (space-separated) every run gets after its own, so
// they win: what a version matrix job's Karpenter needs, such as
// -placeholder-hostname-preference=false on v1.0 and v1.1
// (test/world/suites.sh, KARPENTER_ARGS). They are this checkout's flags:
// a suite that starts an older build (the e2e upgrade) must not run
// under them.
const ArgsEnv = "NRC_CONTROLLER_ARGS"

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// Binary is the controller binary the suites run: $NRC_CONTROLLER_BIN, or
// one built once per test process from the checkout at repoRoot into dir.
func Binary(repoRoot, dir string) (string, error) {
	if bin := os.Getenv(BinaryEnv); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", BinaryEnv, bin, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("%s names no binary: %w", BinaryEnv, err)
		}
		return abs, nil
	}
	buildOnce.Do(func() {
		built = filepath.Join(dir, "node-rotation-controller")
		cmd := exec.Command("go", "build", "-o", built, "./cmd/node-rotation-controller")
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/node-rotation-controller: %w\n%s", err, out)
		}
	})
	return built, buildErr
}

// Controller is one run of the controller binary.
type Controller struct {
	Bin  string
	Args []string
	Log  string // the run's combined stdout and stderr

	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error // set before done is closed
}

// Start runs bin with args, logging to a new file under logDir named after
// name; the process is its own process group, so a kill reaches only it.
func Start(bin, logDir, name string, args ...string) (*Controller, error) {
	return StartWithEnv(bin, logDir, name, nil, args...)
}

// StartWithEnv is Start with env ("KEY=value") added to the environment
// the process inherits, for the controller alone: a benchmark compares
// runtime settings (GOMAXPROCS, GOGC) without handing them to the cluster
// it started before.
func StartWithEnv(bin, logDir, name string, env []string, args ...string) (*Controller, error) {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	args = append(slices.Clip(args), strings.Fields(os.Getenv(ArgsEnv))...)
	c := &Controller{Bin: bin, Args: args, Log: filepath.Join(logDir, fmt.Sprintf("%s-%d.log", name, time.Now().UnixNano()))}
	f, err := os.Create(c.Log)
	if err != nil {
		return nil, fmt.Errorf("controller log: %w", err)
	}
	c.cmd = exec.Command(bin, args...)
	if len(env) > 0 {
		c.cmd.Env = append(os.Environ(), env...)
	}
	c.cmd.Stdout, c.cmd.Stderr = f, f
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	c.done = make(chan struct{})
	go func() { c.exitErr = c.cmd.Wait(); f.Close(); close(c.done) }()
	return c, nil
}

// Pid is the running process's id.
func (c *Controller) Pid() int { return c.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (c *Controller) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// ExitErr is how the process ended (nil for exit status 0); only
// meaningful once Exited.
func (c *Controller) ExitErr() error {
	if !c.Exited() {
		return nil
	}
	return c.exitErr
}

// Stop ends the process as a Deployment's rollout does: SIGTERM, then
// SIGKILL if it has not exited within grace. It reports whether the process
// exited on the SIGTERM.
func (c *Controller) Stop(grace time.Duration) bool {
	if c == nil || c.cmd == nil || c.Exited() {
		return true
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return true
	case <-time.After(grace):
		c.Kill()
		return false
	}
}

// Kill ends the process with SIGKILL, as an OOM kill or a node loss does,
// and waits for it to be gone.
func (c *Controller) Kill() {
	if c == nil || c.cmd == nil || c.Exited() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// Tail is the last n bytes of the run's log.
func (c *Controller) Tail(n int) string {
	b, err := os.ReadFile(c.Log)
	if err != nil {
		return fmt.Sprintf("(log %s unreadable: %v)", c.Log, err)
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// LogLines are the run's log lines containing substr.
func (c *Controller) LogLines(substr string) []string {
	b, err := os.ReadFile(c.Log)
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

// UpgradeFromEnv names the binary of an earlier commit to run instead of
// building one (BinaryAt).
const UpgradeFromEnv = "NRC_UPGRADE_FROM_BIN"

// BinaryAt is the controller binary of an earlier commit of the checkout at
// repoRoot: $NRC_UPGRADE_FROM_BIN, or one built into dir from a temporary
// git worktree of commit (removed after the build), reused when dir already
// holds one built from the same commit, go.mod, go.sum and toolchain. The
// checkout must have the commit: a shallow clone does not.
//
// The earlier commit's code is built against this checkout's go.mod and
// go.sum, with the Makefile's flags (its GOFLAGS, as make exports them)
// and compilers' collector: what an upgrade test holds is the earlier
// build's own logic and the state it leaves, not its dependencies, and so
// a cold run compiles only its own packages, every dependency already in
// the Go build cache (its own go.mod made a cold run compile an older
// Kubernetes client and controller-runtime besides: docs/test-world.md,
// "CI time"). When the earlier code no longer builds against them (a
// dependency dropped or changed its API), it is built against its own
// go.mod and go.sum, and that is said on stderr.
func BinaryAt(repoRoot, commit, dir string) (string, error) {
	if bin := os.Getenv(UpgradeFromEnv); bin != "" {
		return filepath.Abs(bin)
	}
	mods := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			return "", fmt.Errorf("this checkout's %s: %w", f, err)
		}
		mods.Write(b)
	}
	fmt.Fprintf(mods, "%s %s", runtime.Version(), os.Getenv("GOTOOLCHAIN"))
	out := filepath.Join(dir, fmt.Sprintf("node-rotation-controller-%s-%x", commit, mods.Sum(nil)[:6]))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	tree, err := os.MkdirTemp("", "nrc-worktree-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tree)
	src := filepath.Join(tree, "src")
	run := func(dir string, args ...string) error {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, b)
		}
		return nil
	}
	if err := run(repoRoot, "git", "worktree", "add", "--detach", src, commit); err != nil {
		return "", err
	}
	defer func() { _ = run(repoRoot, "git", "worktree", "remove", "--force", src) }()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(src, f), b, 0o644)
		}
		if err != nil {
			return "", fmt.Errorf("this checkout's %s into the worktree of %s: %w", f, commit, err)
		}
	}
	flags := os.Getenv("GOFLAGS")
	if flags == "" {
		flags = "-trimpath -buildvcs=false"
	}
	build := []string{"env", "CGO_ENABLED=0", "GOFLAGS=" + flags, "GOGC=800", "GOMEMLIMIT=4GiB", "go", "build", "-o", out, "./cmd/node-rotation-controller"}
	if err := run(src, build...); err != nil {
		fmt.Fprintf(os.Stderr, "process.BinaryAt: %s does not build against this checkout's go.mod and go.sum; building it against its own\n%v\n", commit, err)
		if err := run(src, "git", "checkout", "--", "go.mod", "go.sum"); err != nil {
			return "", err
		}
		if err := run(src, build...); err != nil {
			return "", err
		}
	}
	return out, nil
}
