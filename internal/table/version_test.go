package table_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/noderotation/node-rotation-controller/internal/golden"
	"github.com/noderotation/node-rotation-controller/internal/table"
	"github.com/noderotation/node-rotation-controller/rules"
)

// fingerprints is the committed record of each version's behaviour.
const fingerprints = "../../rules/fingerprints.txt"

// The shipped table's behaviour is the one recorded for its version: a
// behaviour change under the same version fails here, before and after
// -update, which records a new version's fingerprint and never rewrites
// one already recorded.
func TestVersionIsBumpedOnEveryBehaviourChange(t *testing.T) {
	e, err := table.Load()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fingerprints)
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := parseFingerprints(data)
	if err != nil {
		t.Fatal(err)
	}
	err = checkVersion(recorded, e.Version(), e.Fingerprint())
	if errors.Is(err, errUnrecorded) && *golden.Update {
		line := fmt.Sprintf("%d %s\n", e.Version(), e.Fingerprint())
		if err := os.WriteFile(fingerprints, append(data, line...), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A copy of the table with one guard flipped and the version kept is
// refused with the bump message; the same change with the version bumped
// is a version to record.
func TestAFlippedGuardUnderTheSameVersionIsRefused(t *testing.T) {
	e, err := table.Load()
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[int]string{e.Version(): e.Fingerprint()}
	flip := strings.NewReplacer(
		`guard: 'stranded == "none" && governance == "ungoverned"'`, `guard: 'stranded == "none" && governance == "conflict"'`,
		`guard: 'stranded == "none" && governance == "conflict"'`, `guard: 'stranded == "none" && governance == "ungoverned"'`)
	flipped := flip.Replace(string(rules.Table))
	if flipped == string(rules.Table) {
		t.Fatal("test setup: the guards are not in the table")
	}
	f, err := table.LoadTable([]byte(flipped))
	if err != nil {
		t.Fatal(err)
	}
	err = checkVersion(recorded, f.Version(), f.Fingerprint())
	if err == nil || !strings.Contains(err.Error(), "behaviour changed: bump `version` in rules/rotation.yaml") {
		t.Errorf("same version: %v", err)
	}
	bumped := strings.Replace(flipped, fmt.Sprintf("\nversion: %d\n", e.Version()), fmt.Sprintf("\nversion: %d\n", e.Version()+1), 1)
	if f, err = table.LoadTable([]byte(bumped)); err != nil {
		t.Fatal(err)
	}
	if err := checkVersion(recorded, f.Version(), f.Fingerprint()); !errors.Is(err, errUnrecorded) {
		t.Errorf("bumped: %v, want a version to record", err)
	}
	if err := checkVersion(recorded, e.Version()-1, "x"); err == nil || !strings.Contains(err.Error(), "lower than") {
		t.Errorf("a version lower than one recorded: %v", err)
	}
}

var errUnrecorded = errors.New("no fingerprint is recorded for this version")

// checkVersion holds a table's fingerprint to the one recorded for its
// version.
func checkVersion(recorded map[int]string, version int, fp string) error {
	highest := 0
	for v := range recorded {
		highest = max(highest, v)
	}
	want, ok := recorded[version]
	switch {
	case ok && want != fp:
		return fmt.Errorf("behaviour changed: bump `version` in rules/rotation.yaml (version %d is recorded in rules/fingerprints.txt as %s; this table is %s), add its line to the header's history, then run `go test ./internal/table/ -update`", version, want, fp)
	case ok:
		return nil
	case version < highest:
		return fmt.Errorf("version %d is lower than %d, the highest recorded in rules/fingerprints.txt: versions only go up", version, highest)
	}
	return fmt.Errorf("version %d: %w in rules/fingerprints.txt: run `go test ./internal/table/ -update` to record it", version, errUnrecorded)
}

// parseFingerprints reads "version sha256" lines; # starts a comment.
func parseFingerprints(data []byte) (map[int]string, error) {
	out := map[int]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.Atoi(f[0])
		if len(f) != 2 || err != nil || len(f[1]) != 64 {
			return nil, fmt.Errorf("rules/fingerprints.txt line %d: %q is not \"version sha256\"", n, line)
		}
		if _, dup := out[v]; dup {
			return nil, fmt.Errorf("rules/fingerprints.txt line %d: version %d is recorded twice", n, v)
		}
		out[v] = f[1]
	}
	return out, sc.Err()
}
