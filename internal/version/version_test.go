package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	for _, tc := range []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}, true, "0.2.0"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.2.1-0.20261201120000-abcdef123456"}}, true, "0.2.1-0.20261201120000-abcdef123456"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261203120000-abcdef123456+dirty"}}, true, "0.0.0-20261203120000-abcdef123456+dirty"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "devel"},
		{&debug.BuildInfo{}, true, "devel"},
		{nil, false, "devel"},
	} {
		if got := fromBuildInfo(tc.info, tc.ok); got != tc.want {
			t.Errorf("fromBuildInfo(%+v, %v) = %q, want %q", tc.info, tc.ok, got, tc.want)
		}
	}
}

func TestStampWins(t *testing.T) {
	defer func(old string) { stamped = old }(stamped)
	stamped = "1.2.3"
	if got, want := Line("tool"), "tool 1.2.3 ("+runtime.Version()+", "+runtime.GOOS+"/"+runtime.GOARCH+")"; got != want {
		t.Errorf("Line = %q, want %q", got, want)
	}
}
