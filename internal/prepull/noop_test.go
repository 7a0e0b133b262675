package prepull

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestSubcommandLeavesTheControllersArgumentsAlone(t *testing.T) {
	for _, args := range [][]string{nil, {}, {"-h"}, {"--version"}, {"-namespace=x"}, {"prepull"}} {
		if handled, err := Subcommand(args); handled || err != nil {
			t.Errorf("Subcommand(%q) = %v, %v; want not handled", args, handled, err)
		}
	}
}

func TestTheNoopSubcommandDoesNothing(t *testing.T) {
	dir := t.TempDir()
	if handled, err := Subcommand([]string{NoopArg}); !handled || err != nil {
		t.Fatalf("Subcommand(%s) = %v, %v; want handled, no error", NoopArg, handled, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the no-op wrote %v", entries)
	}
}

func TestInstallCopiesTheRunningBinaryExecutableByAnyone(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "noop")
	if handled, err := Subcommand([]string{InstallArg, dest}); !handled || err != nil {
		t.Fatalf("Subcommand(%s %s) = %v, %v", InstallArg, dest, handled, err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the copy has %d bytes, the running binary %d, or they differ", len(got), len(want))
	}
	st, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o555 {
		t.Errorf("the copy's mode is %v, want r-xr-xr-x", st.Mode().Perm())
	}
	if entries, _ := os.ReadDir(filepath.Dir(dest)); len(entries) != 1 {
		t.Errorf("the install left %d files beside the copy, want none", len(entries)-1)
	}
}

func TestInstallNeedsADestinationItCanWrite(t *testing.T) {
	if handled, err := Subcommand([]string{InstallArg}); !handled || err == nil {
		t.Errorf("%s with no DEST: %v, %v; want a usage error", InstallArg, handled, err)
	}
	missing := filepath.Join(t.TempDir(), "no-such-dir", "noop")
	if _, err := Subcommand([]string{InstallArg, missing}); err == nil {
		t.Errorf("%s into a directory that does not exist succeeded", InstallArg)
	}
}
