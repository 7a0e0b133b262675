package actions

import (
	"sort"
	"testing"

	_ "github.com/noderotation/node-rotation-controller/internal/golden"
)

// Every action the table may name is implemented, and nothing else is.
func TestRegistryImplementsTheCatalog(t *testing.T) {
	var catalog, registry []string
	for name := range Catalog() {
		catalog = append(catalog, name)
	}
	for name := range Registry() {
		registry = append(registry, name)
	}
	sort.Strings(catalog)
	sort.Strings(registry)
	if len(catalog) != len(registry) {
		t.Fatalf("catalog %v\nregistry %v", catalog, registry)
	}
	for i := range catalog {
		if catalog[i] != registry[i] {
			t.Fatalf("catalog %v\nregistry %v", catalog, registry)
		}
	}
}

func TestLaterFailure(t *testing.T) {
	cases := []struct{ pool, claim, want string }{
		{"2026-11-30T10:00:00Z", "2026-11-30T11:00:00Z", "2026-11-30T11:00:00Z"},
		{"2026-11-30T12:00:00Z", "2026-11-30T11:00:00Z", "2026-11-30T12:00:00Z"},
		{"", "2026-11-30T11:00:00Z", "2026-11-30T11:00:00Z"},
		{"garbage", "2026-11-30T11:00:00Z", "2026-11-30T11:00:00Z"},
		{"2026-11-30T12:00:00Z", "garbage", "2026-11-30T12:00:00Z"},
		{"", "", ""},
	}
	for _, c := range cases {
		if got := laterFailure(c.pool, c.claim); got != c.want {
			t.Errorf("laterFailure(%q, %q) = %q, want %q", c.pool, c.claim, got, c.want)
		}
	}
}
