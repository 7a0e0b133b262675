package plan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/noderotation/node-rotation-controller/internal/golden"
)

// write puts content in a fresh file and returns its path.
func write(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const policyA = `apiVersion: noderotation.io/v1alpha1
kind: RotationPolicy
metadata:
  name: a
spec:
  minRotationChances: 3
  maintenanceWindows:
    - {timezone: UTC, days: [Mon], start: "02:00", end: "06:00"}
`

const policyB = `apiVersion: noderotation.io/v1alpha1
kind: RotationPolicy
metadata:
  name: b
spec:
  maintenanceWindows:
    - {timezone: UTC, days: [Sat], start: "02:00", end: "06:00"}
  ageThreshold: 100h
`

func TestParseDuration(t *testing.T) {
	const day = 24 * time.Hour
	cases := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"14d", 14 * day, false},
		{"5d12h", 5*day + 12*time.Hour, false},
		{"1d30m", day + 30*time.Minute, false},
		{"336h", 336 * time.Hour, false},
		{"90m", 90 * time.Minute, false},
		{"1h30m", 90 * time.Minute, false},
		{"0d", 0, false},
		{"-1d", -day, false}, // the caller rejects non-positive values
		{"1d-1h", 23 * time.Hour, false},
		{"d", 0, true},
		{"xd", 0, true},
		{"1.5d", 0, true},
		{"1d1d", 0, true},
		{"2dh", 0, true},
		{"1h30md", 0, true},
		{"Never", 0, true},
		{"two weeks", 0, true},
		{"14", 0, true},
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in)
		if c.err {
			want := `"` + c.in + `" is not a duration (e.g. 14d, 336h, 1h30m)`
			if err == nil || err.Error() != want {
				t.Errorf("ParseDuration(%q) = %s, %v; want error %q", c.in, got, err, want)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseDuration(%q) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
}

func TestLoadPolicy(t *testing.T) {
	single := write(t, "single.yaml", policyA)
	several := write(t, "several.yaml", "---\n"+policyA+"---\n# only a comment\n---\n"+policyB)
	mixed := write(t, "mixed.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: nrc}\n---\n"+policyB)
	cases := []struct {
		name, path, policy string
		want               string // policy name, or the error
		err                bool
	}{
		{"a single policy needs no name", single, "", "a", false},
		{"the single policy by its name", single, "a", "a", false},
		{"a name the file lacks", single, "b", single + `: no RotationPolicy named "b"`, true},
		{"several need a name", several, "", several + ": 2 RotationPolicies in the file; choose one with --policy NAME", true},
		{"several, by name", several, "b", "b", false},
		{"other kinds are skipped", mixed, "", "b", false},
		{"no policy at all", write(t, "ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: nrc}\n"), "",
			"ns.yaml: no RotationPolicy in the file", true},
		{"an empty file", write(t, "empty.yaml", "\n---\n\n"), "", "empty.yaml: no RotationPolicy in the file", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := LoadPolicy(c.path, c.policy)
			if c.err {
				if err == nil || !strings.HasSuffix(err.Error(), c.want) {
					t.Errorf("error = %v, want one ending %q", err, c.want)
				}
				return
			}
			if err != nil || p.Name != c.want {
				t.Fatalf("policy %q, error %v; want %q", p.Name, err, c.want)
			}
		})
	}
	p, err := LoadPolicy(several, "a")
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.MinRotationChances != 3 || len(p.Spec.MaintenanceWindows) != 1 || p.Spec.MaintenanceWindows[0].End != "06:00" {
		t.Errorf("policy a decoded as %+v", p.Spec)
	}
	// the CRD's defaults apply, as on the API server
	b, err := LoadPolicy(several, "b")
	if err != nil || b.Spec.MinRotationChances != 2 {
		t.Errorf("policy b: minRotationChances %d, %v; want the CRD's default 2", b.Spec.MinRotationChances, err)
	}
}

func TestLoadPolicyDecodeErrors(t *testing.T) {
	cases := []struct {
		name, content, want string
	}{
		{"unknown field, strictly", policyB + "  maintenanceWindow: []\n", `document 1: strict decoding error: unknown field "spec.maintenanceWindow"`},
		{"the failing document is counted", policyA + "---\n" + policyB + "  bogus: 1\n", `document 2: strict decoding error: unknown field "spec.bogus"`},
		{"wrong type", "kind: RotationPolicy\nspec:\n  minRotationChances: many\n", "document 1: "},
		{"not yaml", "kind: RotationPolicy\nspec: [\n", "document 1: yaml: "},
		// what the API server refuses, in its words (internal/admission)
		{"a version the CRD does not serve", strings.Replace(policyA, "v1alpha1", "v1", 1),
			`document 1: no matches for kind "RotationPolicy" in version "noderotation.io/v1": the CRD serves noderotation.io/v1alpha1`},
		{"below the schema's minimum", strings.Replace(policyA, "minRotationChances: 3", "minRotationChances: 0", 1),
			`document 1: RotationPolicy.noderotation.io "a" is invalid: spec.minRotationChances: Invalid value: 0: spec.minRotationChances in body should be greater than or equal to 1`},
		{"a wrong type, in the API server's words", strings.Replace(policyA, "minRotationChances: 3", "minRotationChances: two", 1),
			`document 1: RotationPolicy.noderotation.io "a" is invalid: [spec.minRotationChances: Invalid value: "string": spec.minRotationChances in body must be of type integer: "string"`},
		{"a CEL rule", strings.Replace(policyA, "minRotationChances: 3", "ageThreshold: soon", 1),
			`document 1: RotationPolicy.noderotation.io "a" is invalid: spec.ageThreshold: Invalid value: "soon": ageThreshold must be "auto" or a Go duration such as 90m`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := write(t, "p.yaml", c.content)
			_, err := LoadPolicy(path, "")
			if err == nil || !strings.HasPrefix(err.Error(), path+": "+c.want) {
				t.Errorf("error = %v, want prefix %q", err, path+": "+c.want)
			}
			if err != nil && strings.Contains(err.Error(), "error unmarshaling JSON") {
				t.Errorf("the decoder's wrapping was kept: %v", err)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for name, load := range map[string]func() error{
		"policy":   func() error { _, err := LoadPolicy(missing, ""); return err },
		"nodepool": func() error { _, err := LoadNodePool(missing); return err },
	} {
		err := load()
		if err == nil || err.Error() != missing+": no such file or directory" || !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: error = %v, want %q", name, err, missing+": no such file or directory")
		}
	}
}

func TestLoadNodePool(t *testing.T) {
	pool := func(name, templateSpec string) string {
		return "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: " + name + "\nspec:\n  template:\n    spec:\n" + templateSpec
	}
	h := func(d time.Duration) *time.Duration { return &d }
	cases := []struct {
		name, content string
		want          Pool
	}{
		{"both set", pool("api", "      expireAfter: 336h\n      terminationGracePeriod: 1h\n"), Pool{Name: "api", ExpireAfter: h(336 * time.Hour), TerminationGrace: h(time.Hour)}},
		{"absent expireAfter is Karpenter's 720h", pool("api", "      terminationGracePeriod: 90s\n"), Pool{Name: "api", ExpireAfter: h(720 * time.Hour), TerminationGrace: h(90 * time.Second)}},
		{"no terminationGracePeriod", pool("batch", "      expireAfter: 24h\n"), Pool{Name: "batch", ExpireAfter: h(24 * time.Hour)}},
		{"expireAfter Never has no deadline", pool("batch", "      expireAfter: Never\n"), Pool{Name: "batch"}},
		{"the first NodePool after other kinds", policyB + "---\n" + pool("first", "      expireAfter: 1h\n") + "---\n" + pool("second", "      expireAfter: 2h\n"),
			Pool{Name: "first", ExpireAfter: h(time.Hour)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := LoadNodePool(write(t, "np.yaml", c.content))
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != c.want.Name || !sameDuration(got.ExpireAfter, c.want.ExpireAfter) || !sameDuration(got.TerminationGrace, c.want.TerminationGrace) {
				t.Errorf("pool = %s %v %v, want %s %v %v", got.Name, got.ExpireAfter, got.TerminationGrace, c.want.Name, c.want.ExpireAfter, c.want.TerminationGrace)
			}
		})
	}
}

func TestLoadNodePoolErrors(t *testing.T) {
	cases := []struct {
		name, content, want string
	}{
		{"no NodePool", policyA, "no Karpenter NodePool in the file"},
		{"a day unit Karpenter does not accept", "kind: NodePool\nspec:\n  template:\n    spec:\n      expireAfter: 14d\n", `document 1: time: unknown unit "d" in duration "14d"`},
		{"not yaml", "kind: NodePool\nspec: [\n", "document 1: yaml: "},
	}
	for _, c := range cases {
		path := write(t, "np.yaml", c.content)
		_, err := LoadNodePool(path)
		if err == nil || !strings.HasPrefix(err.Error(), path+": "+c.want) {
			t.Errorf("%s: error = %v, want prefix %q", c.name, err, path+": "+c.want)
		}
	}
}

func TestCleanJSONError(t *testing.T) {
	cases := []struct{ in, want string }{
		{`error unmarshaling JSON: while decoding JSON: json: unknown field "x"`, `unknown field "x"`},
		{"error converting YAML to JSON: yaml: line 2: did not find expected node content", "yaml: line 2: did not find expected node content"},
		{"json: cannot unmarshal string into Go struct field", "cannot unmarshal string into Go struct field"},
		{"something else: json: x", "something else: json: x"},
	}
	for _, c := range cases {
		if got := cleanJSONError(errors.New(c.in)); got != c.want {
			t.Errorf("cleanJSONError(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func sameDuration(a, b *time.Duration) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
