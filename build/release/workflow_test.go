package main

import (
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// The release workflow cannot run here (it publishes to ghcr.io and
// GitHub); this reads it as GitHub would and checks what it promises.
type workflow struct {
	On struct {
		Push struct {
			Tags []string `json:"tags"`
		} `json:"push"`
	} `json:"on"`
	Permissions map[string]string `json:"permissions"`
	Jobs        map[string]job    `json:"jobs"`
}

type job struct {
	If          string            `json:"if"`
	Needs       any               `json:"needs"` // a job's name or a list of them
	Permissions map[string]string `json:"permissions"`
	Steps       []step            `json:"steps"`
}

type step struct {
	Name            string            `json:"name"`
	Uses            string            `json:"uses"`
	With            map[string]any    `json:"with"`
	Run             string            `json:"run"`
	Env             map[string]string `json:"env"`
	If              string            `json:"if"`
	ContinueOnError any               `json:"continue-on-error"`
}

// needs are the jobs j waits for.
func (j job) needs() []string {
	switch n := j.Needs.(type) {
	case string:
		return []string{n}
	case []any:
		var out []string
		for _, v := range n {
			out = append(out, stringOf(v))
		}
		return out
	}
	return nil
}

// runsTheGate: one line of the step's script is exactly make test-matrix
// (not echoed, not `|| true`, not another target), and the step is
// neither conditional nor allowed to fail.
func (s step) runsTheGate() bool {
	if s.If != "" || s.ContinueOnError != nil {
		return false
	}
	for _, l := range strings.Split(s.Run, "\n") {
		if strings.TrimSpace(l) == "make test-matrix" {
			return true
		}
	}
	return false
}

// publishes: the step pushes, signs, attests, uploads or logs in to a
// registry (credentials must not exist where the gate runs).
func (s step) publishes() bool {
	if strings.HasPrefix(s.Uses, "actions/attest-build-provenance@") {
		return true
	}
	for _, verb := range []string{"crane push", "helm push", "cosign sign", "cosign attest", "gh release", "auth login", "registry login"} {
		if strings.Contains(s.Run, verb) {
			return true
		}
	}
	return false
}

func readWorkflow(t *testing.T) (workflow, string) {
	t.Helper()
	raw, err := os.ReadFile("../../.github/workflows/release.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(raw, &w); err != nil {
		t.Fatalf("release.yaml: %v", err)
	}
	// YAML 1.1, which the parser speaks, reads the key on as true; GitHub
	// reads it as "on".
	var keys map[string]any
	if err := yaml.Unmarshal(raw, &keys); err != nil {
		t.Fatal(err)
	}
	if on, ok := keys["true"]; ok {
		b, err := yaml.Marshal(on)
		if err == nil {
			err = yaml.Unmarshal(b, &w.On)
		}
		if err != nil {
			t.Fatalf("release.yaml on: %v", err)
		}
	}
	if len(w.Jobs) == 0 {
		t.Fatal("release.yaml has no job")
	}
	return w, string(raw)
}

var (
	pinnedAction = regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`)
	goInstall    = regexp.MustCompile(`go install (\S+)`)
	pinnedModule = regexp.MustCompile(`@v\d+\.\d+\.\d+$`)
	cosignPinned = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)
)

// Every action is pinned by commit, every tool by version; the workflow
// runs on a v* tag with the permissions keyless signing needs.
func TestWorkflowIsPinned(t *testing.T) {
	w, _ := readWorkflow(t)
	if len(w.On.Push.Tags) != 1 || w.On.Push.Tags[0] != "v*" {
		t.Errorf("on.push.tags = %v, want [v*]", w.On.Push.Tags)
	}
	if len(w.Permissions) != 0 {
		t.Errorf("workflow permissions %v: each job names its own", w.Permissions)
	}
	publishers := 0
	for name, j := range w.Jobs {
		if !slices.ContainsFunc(j.Steps, step.publishes) {
			continue
		}
		publishers++
		for k, v := range map[string]string{"contents": "write", "packages": "write", "id-token": "write", "attestations": "write"} {
			if got := j.Permissions[k]; got != v {
				t.Errorf("job %q publishes: permissions.%s = %q, want %s", name, k, got, v)
			}
		}
	}
	if publishers == 0 {
		t.Error("no job publishes")
	}
	for job, j := range w.Jobs {
		for i, s := range j.Steps {
			if s.Uses != "" && !pinnedAction.MatchString(s.Uses) {
				t.Errorf("%s step %d: uses %s, not pinned by a commit SHA", job, i, s.Uses)
			}
			if s.Uses != "" && strings.HasPrefix(s.Uses, "sigstore/cosign-installer@") && !cosignPinned.MatchString(stringOf(s.With["cosign-release"])) {
				t.Errorf("%s step %d: cosign-release %v, want a pinned vX.Y.Z", job, i, s.With["cosign-release"])
			}
			for _, m := range goInstall.FindAllStringSubmatch(s.Run, -1) {
				if !pinnedModule.MatchString(m[1]) {
					t.Errorf("%s step %d: go install %s, not pinned to a version", job, i, m[1])
				}
			}
		}
	}
}

func stringOf(v any) string { s, _ := v.(string); return s }

func allSteps(w workflow) []step {
	var out []step
	for _, j := range w.Jobs {
		out = append(out, j.Steps...)
	}
	return out
}

// Everything make release writes is published: the image index pushed,
// signed, its SBOM attested and its provenance; the chart pushed, signed
// and attested; every file uploaded to the release. The names are the
// release tool's own, for a sample version.
func TestWorkflowPublishesEveryArtifact(t *testing.T) {
	w, _ := readWorkflow(t)
	const v = "1.2.3"
	var run strings.Builder
	var provenance []map[string]any
	for _, j := range w.Jobs {
		for _, s := range j.Steps {
			run.WriteString(s.Run + "\n")
			if strings.HasPrefix(s.Uses, "actions/attest-build-provenance@") {
				provenance = append(provenance, s.With)
			}
		}
	}
	uploads := uploadGlobs(t, v)
	script := run.String()
	if !slices.ContainsFunc(allSteps(w), step.runsTheGate) {
		t.Error("the workflow does not run the release gate, make test-matrix (which builds with make release-reproducible)")
	}
	files := []string{checksumsName, sbomName("node-rotation-controller", v), sbomName("rotationctl", v), crdsName(v),
		"node-rotation-controller-" + v + ".tgz", krewName, manifestName}
	for _, p := range cliPlatforms {
		files = append(files, archiveName(v, p.os, p.arch))
	}
	for _, f := range files {
		if !matchesAny(uploads, "dist/release/"+f) {
			t.Errorf("%s is not uploaded to the release (uploads: %v)", f, uploads)
		}
	}
	if pushed := pushedLayouts(script, v); !slices.Contains(pushed, "dist/release/"+layoutName(v)) {
		t.Errorf("the image layout %s is not pushed (crane push --index of %v)", layoutName(v), pushed)
	}
	for _, want := range []string{
		`helm push "dist/release/node-rotation-controller-${V}.tgz"`,
		`cosign sign --yes "$IMAGE@$IMAGE_DIGEST"`,
		`cosign sign --yes "${CHARTS#oci://}/node-rotation-controller@$CHART_DIGEST"`,
		`cosign attest --yes --type cyclonedx --predicate "dist/release/node-rotation-controller_${V}.cdx.json" "$IMAGE@$IMAGE_DIGEST"`,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("the workflow does not run %s", want)
		}
	}
	subjects := map[string]bool{}
	for _, p := range provenance {
		subjects[stringOf(p["subject-name"])+stringOf(p["subject-path"])] = true
	}
	for _, want := range []string{"ghcr.io/noderotation/node-rotation-controller", "ghcr.io/noderotation/charts/node-rotation-controller", "dist/release/rotationctl_*.tar.gz"} {
		if !subjects[want] {
			t.Errorf("no build provenance attested for %s (%v)", want, subjects)
		}
	}
}

var cranePushIndex = regexp.MustCompile(`crane push --index "([^"]+)"`)

// pushedLayouts are the directories the workflow pushes as image indexes,
// with the version substituted.
func pushedLayouts(script, v string) []string {
	var out []string
	for _, m := range cranePushIndex.FindAllStringSubmatch(script, -1) {
		out = append(out, strings.ReplaceAll(strings.ReplaceAll(m[1], "${V}", v), "$V", v))
	}
	return out
}

// uploadGlobs are the files the workflow uploads to the release, with the
// version substituted.
func uploadGlobs(t *testing.T, v string) []string {
	t.Helper()
	w, _ := readWorkflow(t)
	var out []string
	for _, j := range w.Jobs {
		for _, s := range j.Steps {
			if !strings.Contains(s.Run, "gh release create") {
				continue
			}
			for _, f := range strings.Fields(strings.ReplaceAll(s.Run, "\\\n", " ")) {
				if strings.HasPrefix(f, "dist/release/") {
					out = append(out, strings.ReplaceAll(strings.ReplaceAll(f, "${V}", v), "$V", v))
				}
			}
		}
	}
	return out
}

func matchesAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// The release gate runs before anything leaves the runner, and where no
// credential does: one job runs make test-matrix (every compatibility
// row, the reproducibility builds) unconditionally, with read-only
// permissions and no publishing step; every job that publishes, signs,
// attests, uploads or logs in needs it.
func TestWorkflowRunsTheReleaseGateBeforeItPushes(t *testing.T) {
	w, _ := readWorkflow(t)
	gate := ""
	for name, j := range w.Jobs {
		if slices.ContainsFunc(j.Steps, step.runsTheGate) {
			gate = name
		}
	}
	if gate == "" {
		t.Fatal("no job runs make test-matrix unconditionally (a line of its own, no if, no continue-on-error)")
	}
	g := w.Jobs[gate]
	if g.If != "" {
		t.Errorf("job %s, the gate, runs only if %s", gate, g.If)
	}
	for k, v := range g.Permissions {
		if k != "contents" || v != "read" {
			t.Errorf("job %s, the gate: permissions.%s = %s, want only contents: read (it runs third-party code)", gate, k, v)
		}
	}
	if len(g.Permissions) == 0 {
		t.Errorf("job %s, the gate, names no permissions: it would get the workflow's", gate)
	}
	for name, j := range w.Jobs {
		for i, s := range j.Steps {
			if !s.publishes() {
				continue
			}
			switch {
			case name == gate:
				t.Errorf("job %s, the gate: step %d (%q) publishes", name, i, s.Name)
			case !slices.Contains(j.needs(), gate):
				t.Errorf("job %s: step %d (%q) publishes, and the job does not need %s", name, i, s.Name, gate)
			case j.If != "":
				t.Errorf("job %s publishes and runs if %s: an if (always(), failure()) could run it after a failed gate", name, j.If)
			}
		}
	}
}
