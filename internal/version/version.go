// Package version says which release a binary is. The release build
// (`make image`) stamps the repository's VERSION file into it with
// -ldflags "-X <this package>.stamped=<version>". Without the stamp it is
// the module version Go records: the release of `go install
// …/cmd/rotationctl@v0.1.0`, or for a `go build` in a git checkout the
// version Go derives from git (the tag of a clean tagged commit, else a
// pseudo-version such as 0.0.0-20261203120000-abcdef123456+dirty); "devel"
// when Go records none (-buildvcs=false, or no git).
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// stamped is set at link time; see the package comment.
var stamped string

// Version is the release this binary was built as, without a leading "v"
// (the form of VERSION, the chart's appVersion and the image tag).
func Version() string {
	if stamped != "" {
		return stamped
	}
	return fromBuildInfo(debug.ReadBuildInfo())
}

// fromBuildInfo is the module version Go recorded, or "devel" when it
// recorded none ("(devel)", or no build information).
func fromBuildInfo(info *debug.BuildInfo, ok bool) string {
	if !ok || info.Main.Version == "" || info.Main.Version == "(devel)" {
		return "devel"
	}
	return strings.TrimPrefix(info.Main.Version, "v")
}

// Line is what `--version` prints: the program, its version, and the Go
// toolchain and platform it was built for.
func Line(program string) string {
	return fmt.Sprintf("%s %s (%s, %s/%s)", program, Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
