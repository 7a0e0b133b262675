// Command rotationctl is the operator CLI of node-rotation-controller:
// `plan` derives a policy's schedule figures and findings offline, `rules`
// lints, renders, expands and diffs the rotation transition table, and
// `status` and `explain` show what the controller does on a live cluster
// and why, and `simulate` runs the controller on a simulated fleet over
// weeks. Installed as kubectl-noderotation it is also a kubectl plugin.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes: 1 when the answer is "no" (a fatal finding), 2 when the input
// cannot be used.
const (
	exitFatal    = 1
	exitBadInput = 2
)

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }

func badInput(format string, args ...any) error {
	return exitError{code: exitBadInput, err: fmt.Errorf(format, args...)}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commandName is how the user called us: "kubectl noderotation" when kubectl
// runs us as its plugin kubectl-noderotation, else rotationctl.
func commandName(argv0 string) string {
	if strings.HasPrefix(filepath.Base(argv0), "kubectl-noderotation") {
		return "kubectl noderotation"
	}
	return "rotationctl"
}

// run executes the CLI with args and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "rotationctl",
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: commandName(os.Args[0])},
		Short:         "Operator CLI for node-rotation-controller",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(planCommand(), rulesCommand(), statusCommand(), explainCommand(), simulateCommand(), versionCommand())
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee exitError
	code := exitBadInput // cobra's own errors are flag/argument errors
	if errors.As(err, &ee) {
		code = ee.code
	}
	if err.Error() != "" {
		fmt.Fprintf(stderr, "rotationctl: %v\n", err)
	}
	return code
}
