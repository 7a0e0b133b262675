// Package version says which release a binary is. The release build
// (`make image`, `make release`) stamps the repository's VERSION file into
// it with -ldflags "-X <this package>.stamped=<version>"; `go install
// …/cmd/rotationctl@v0.1.0` gets the module version Go records instead; a
// plain `go build` in a checkout is "devel".
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

// fromBuildInfo is the module version of a `go install …@version` build,
// or "devel" for a build of a checkout (Go records "(devel)", or nothing
// without build information).
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
