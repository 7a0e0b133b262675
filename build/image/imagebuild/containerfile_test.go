package imagebuild_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/noderotation/node-rotation-controller/build/image/imagebuild"
)

// repoRoot is the main module's root, from this package's directory.
var repoRoot = filepath.Join("..", "..", "..")

// instruction is one Containerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, …
	args string
}

func parseContainerfile(t *testing.T) [][]instruction {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var stages [][]instruction
	var cur string
	for _, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur += strings.TrimSuffix(trimmed, `\`) + " "
			continue
		}
		cur += trimmed
		cmd, args, _ := strings.Cut(cur, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		cur = ""
		if in.cmd == "FROM" {
			stages = append(stages, nil)
		}
		if len(stages) == 0 {
			t.Fatalf("Containerfile: %s before the first FROM", in.cmd)
		}
		stages[len(stages)-1] = append(stages[len(stages)-1], in)
	}
	if cur != "" {
		t.Fatalf("Containerfile ends in a continuation line")
	}
	return stages
}

// labelPair is key="value" or key=value in a LABEL instruction.
var labelPair = regexp.MustCompile(`([A-Za-z0-9_.\-]+)=("(?:[^"\\]|\\.)*"|\S+)`)

// TestContainerfileMatches: the Containerfile's final image is the one
// `make image` builds (user, entrypoint, working directory, labels, one
// file), its builder uses the Makefile's build flags, and its default
// version is the chart's appVersion.
func TestContainerfileMatches(t *testing.T) {
	stages := parseContainerfile(t)
	if len(stages) != 2 {
		t.Fatalf("Containerfile has %d stages, want a builder and the image", len(stages))
	}
	build, final := stages[0], stages[1]
	if final[0].args != "scratch" {
		t.Errorf("final stage FROM %s, want scratch", final[0].args)
	}
	// the Go release make image builds with (the Makefile's GOTOOLCHAIN)
	tc := regexp.MustCompile(`^go(1\.\d+)\.\d+$`).FindStringSubmatch(makefileVar(t, "GOTOOLCHAIN"))
	if tc == nil {
		t.Fatalf("the Makefile's GOTOOLCHAIN %q is not a goX.Y.Z release", makefileVar(t, "GOTOOLCHAIN"))
	}
	if want := "golang:" + tc[1]; build[0].args != want+" AS build" && !strings.HasPrefix(build[0].args, want+".") {
		t.Errorf("builder FROM %s, want %s, the Go that make image builds with", build[0].args, want)
	}

	args := map[string]string{}
	labels := map[string]string{}
	got := map[string][]string{}
	for _, in := range final {
		got[in.cmd] = append(got[in.cmd], in.args)
		switch in.cmd {
		case "ARG":
			k, v, _ := strings.Cut(in.args, "=")
			args[k] = v
		case "LABEL":
			for _, m := range labelPair.FindAllStringSubmatch(in.args, -1) {
				v := m[2]
				if strings.HasPrefix(v, `"`) {
					v = v[1 : len(v)-1]
				}
				labels[m[1]] = os.Expand(v, func(k string) string { return args[k] })
			}
		}
	}
	one := func(cmd string) string {
		t.Helper()
		if len(got[cmd]) != 1 {
			t.Fatalf("final stage: %d %s instructions, want 1", len(got[cmd]), cmd)
		}
		return got[cmd][0]
	}
	if u := one("USER"); u != imagebuild.User {
		t.Errorf("USER %s, the image builder's %s", u, imagebuild.User)
	}
	if w := one("WORKDIR"); w != imagebuild.WorkingDir {
		t.Errorf("WORKDIR %s, the image builder's %s", w, imagebuild.WorkingDir)
	}
	var ep []string
	if err := json.Unmarshal([]byte(one("ENTRYPOINT")), &ep); err != nil || len(ep) != 1 || ep[0] != imagebuild.Entrypoint {
		t.Errorf("ENTRYPOINT %s (%v), want the exec form [%q]", one("ENTRYPOINT"), err, imagebuild.Entrypoint)
	}
	if cp := strings.Fields(one("COPY")); len(cp) != 3 || cp[0] != "--from=build" || cp[2] != imagebuild.Entrypoint {
		t.Errorf("COPY %s, want the builder's binary copied to %s alone", one("COPY"), imagebuild.Entrypoint)
	}
	for _, forbidden := range []string{"RUN", "ADD", "CMD", "ENV", "SHELL"} {
		if len(got[forbidden]) > 0 {
			t.Errorf("final stage has %s %q: the image holds the binary alone", forbidden, got[forbidden])
		}
	}

	appVersion := chartAppVersion(t)
	if release := repoVersion(t); appVersion != release {
		t.Errorf("the chart's appVersion is %s, the VERSION file says %s", appVersion, release)
	}
	if args["VERSION"] != appVersion {
		t.Errorf("ARG VERSION=%s, the chart's appVersion is %s", args["VERSION"], appVersion)
	}
	want := imagebuild.Spec{Version: appVersion}.Labels()
	if len(labels) != len(want) {
		t.Errorf("labels %v, want %v", labels, want)
	}
	for k, v := range want {
		if labels[k] != v {
			t.Errorf("label %s = %q, the image builder's %q", k, labels[k], v)
		}
	}

	// The builder's go build: static, with the Makefile's flags, the
	// version stamp spelled out and taken from the builder's own ARG.
	flags := strings.ReplaceAll(makefileVar(t, "IMAGE_GOBUILD_FLAGS"), "$(VERSION_LDFLAG)", makefileVar(t, "VERSION_LDFLAG"))
	flags = strings.ReplaceAll(flags, "$(VERSION)", "${VERSION}")
	var goBuild string
	for _, in := range build {
		if in.cmd == "ARG" && in.args != "VERSION="+appVersion && strings.HasPrefix(in.args, "VERSION") {
			t.Errorf("builder ARG %s, want VERSION=%s", in.args, appVersion)
		}
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			goBuild = in.args
		}
	}
	if !strings.Contains(goBuild, "CGO_ENABLED=0") || !strings.Contains(goBuild, "GOOS=linux") ||
		!strings.Contains(goBuild, "go build "+flags+" ") || !strings.Contains(goBuild, "./cmd/node-rotation-controller") ||
		!strings.Contains(goBuild, "chmod 0555") {
		t.Errorf("builder RUN %q: want CGO_ENABLED=0 GOOS=linux go build %s … ./cmd/node-rotation-controller, chmod 0555", goBuild, flags)
	}
}

func chartAppVersion(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "charts", "node-rotation-controller", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^appVersion:\s*"?([^"\s]+)"?\s*$`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("Chart.yaml has no appVersion")
	}
	return string(m[1])
}

func repoVersion(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(raw))
}

func makefileVar(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + name + `\s*[:?]?=\s*(.*?)\s*$`).FindSubmatch(raw)
	if m == nil {
		t.Fatalf("the Makefile sets no %s", name)
	}
	return string(m[1])
}

// TestChartDefaultImage: the chart's default image is what `make image`
// builds by default (the Makefile reads both from the chart) and what the
// README here documents.
func TestChartDefaultImage(t *testing.T) {
	values, err := os.ReadFile(filepath.Join(repoRoot, "charts", "node-rotation-controller", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^image:\n(?:[ \t]+.*\n)*?[ \t]+repository:\s*(\S+)`).FindSubmatch(values)
	if m == nil {
		t.Fatal("values.yaml has no image.repository")
	}
	ref := string(m[1]) + ":" + chartAppVersion(t)
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), ref) {
		t.Errorf("build/image/README.md does not mention the chart's default image %s", ref)
	}
	if !strings.Contains(makefileVar(t, "IMAGE_REPOSITORY"), "values.yaml") || makefileVar(t, "VERSION") != "$(shell cat VERSION)" {
		t.Errorf("the Makefile's IMAGE_REPOSITORY is not read from the chart, or its VERSION not from the VERSION file")
	}
}
