package simulate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFleet(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Explicit creation times: the pool's nodes are created then, count by
// count, and the run's lanes start there.
func TestFleetCreatedTimes(t *testing.T) {
	f, err := LoadFleet(writeFleet(t, `
start: "2026-12-07T00:00:00Z"
span: 1d
pools:
  - name: p
    expireAfter: 14d
    created:
      - {at: "2026-11-30T00:00:00Z", count: 2}
      - {at: "2026-12-01T12:00:00Z"}
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Pools[0].Nodes != 3 {
		t.Fatalf("nodes %d, want 3 from created", f.Pools[0].Nodes)
	}
	r := run(t, f, nil, 1)
	want := []string{"2026-11-30T00:00:00Z", "2026-11-30T00:00:00Z", "2026-12-01T12:00:00Z"}
	for i, l := range r.Pools[0].Lanes[:3] {
		if got := l.Created.UTC().Format(time.RFC3339); got != want[i] {
			t.Errorf("lane %d created %s, want %s", i, got, want[i])
		}
	}
}

func TestFleetFileErrorsNameTheField(t *testing.T) {
	for body, want := range map[string]string{
		"pools: []":                    "pools: at least one pool is needed",
		"pools: [{name: p, nodes: 0}]": "nodes: must be at least 1",
		"pools: [{name: p, nodes: 1, expireAfter: soon}]":                                            `expireAfter "soon"`,
		"pools: [{name: p, nodes: 1, launchFailureRate: 1}]":                                         "launchFailureRate",
		"pools: [{name: p, nodes: 1, stuckDrainRate: 0.1}]":                                          "terminationGracePeriod, which is unset",
		"pools: [{name: p, nodes: 1, age: 1d, created: [{at: '2026-12-01T00:00:00Z'}]}]":             "age and created",
		"start: '2026-12-01T00:00:00Z'\npools: [{name: p, created: [{at: '2026-12-02T00:00:00Z'}]}]": "at or before the start",
		"pools: [{name: p, nodes: 5, created: [{at: '2026-12-01T00:00:00Z'}]}]":                      "nodes 5: created lists 1",
		"pools: [{name: p, nodes: 1}, {name: p, nodes: 1}]":                                          "used twice",
		"pools: [{name: p, nodes: 1, launch: {min: 5m, max: 1m}}]":                                   "below min",
	} {
		_, err := LoadFleet(writeFleet(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %q", body, err, want)
		}
	}
}
