package prepull

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The pre-pull Pod's containers must run something in any image, and many
// images (distroless, scratch) have no shell and no binary to run. So the
// Pod's init container, the controller's own image, copies the controller's
// binary — static, no libc — into an emptyDir, and each image's container
// runs that copy with NoopArg, which exits at once: the kubelet pulled the
// image to start it, which is all the phase is for
// (docs/design.md#pre-pull).
const (
	// NoopArg as the first argument makes the binary exit 0 before it
	// reads a flag.
	NoopArg = "prepull-noop"
	// InstallArg DEST copies the running binary to DEST.
	InstallArg = "prepull-install"
)

// Subcommand runs the pre-pull subcommand args names, if any: handled is
// false when args (the arguments after the program name) name none, and the
// caller goes on as the controller.
func Subcommand(args []string) (handled bool, err error) {
	if len(args) == 0 {
		return false, nil
	}
	switch args[0] {
	case NoopArg:
		return true, nil
	case InstallArg:
		if len(args) != 2 {
			return true, fmt.Errorf("usage: %s DEST", InstallArg)
		}
		return true, Install(args[1])
	}
	return false, nil
}

// Install copies the running executable to dest, executable by every user
// (the image containers run as a user of the Pod's choosing), through a
// temporary file renamed into place: a container that starts beside a
// half-written copy never sees it.
func Install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the running executable: %w", err)
	}
	return copyExecutable(self, dest)
}

func copyExecutable(src, dest string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("opening %s: %w", src, err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".install-*")
	if err != nil {
		return fmt.Errorf("creating a file beside %s: %w", dest, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return fmt.Errorf("copying %s to %s: %w", src, tmp.Name(), err)
	}
	if err := tmp.Chmod(0o555); err != nil {
		tmp.Close()
		return fmt.Errorf("making %s executable: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return fmt.Errorf("installing %s: %w", dest, err)
	}
	return nil
}
