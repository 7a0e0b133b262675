// Command node-rotation-controller is the manager: it rotates Karpenter
// NodeClaims gracefully inside maintenance windows, make-before-break.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/noderotation/node-rotation-controller/internal/prepull"
	"github.com/noderotation/node-rotation-controller/internal/version"
)

func main() {
	// The pre-pull Pod runs this binary in every image it pulls
	// (docs/design.md#pre-pull): those subcommands come before flags.
	if handled, err := prepull.Subcommand(os.Args[1:]); handled {
		if err != nil {
			fmt.Fprintf(os.Stderr, "node-rotation-controller: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	opts, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if errors.Is(err, errVersion) {
		fmt.Println(version.Line("node-rotation-controller"))
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "node-rotation-controller: %v\n", err)
		os.Exit(2)
	}
	if err := run(opts); err != nil {
		fmt.Fprintf(os.Stderr, "node-rotation-controller: %v\n", err)
		os.Exit(1)
	}
}
