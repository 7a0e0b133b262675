package rotation_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/noderotation/node-rotation-controller/engine"
	"github.com/noderotation/node-rotation-controller/rules"
)

// transitionCoverage maps every transition id to the pools — one per spec —
// whose passes took it.
type transitionCoverage struct {
	mu   sync.Mutex
	hits map[string]map[string]bool
}

func newCoverage() *transitionCoverage {
	return &transitionCoverage{hits: map[string]map[string]bool{}}
}

func (c *transitionCoverage) record(pool string, d engine.Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hits[d.Transition] == nil {
		c.hits[d.Transition] = map[string]bool{}
	}
	c.hits[d.Transition][pool] = true
}

// check writes the coverage report and fails when a transition of the
// shipped table was never taken by any envtest case.
func (c *transitionCoverage) check() {
	e, err := rules.Load()
	Expect(err).NotTo(HaveOccurred())
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	var missing []string
	fmt.Fprintf(&b, "transition coverage of rules version %d by envtest cases (NodePool = case)\n", e.Version())
	for _, id := range e.TransitionIDs() {
		var pools []string
		for p := range c.hits[id] {
			pools = append(pools, p)
		}
		sort.Strings(pools)
		if len(pools) == 0 {
			missing = append(missing, id)
		}
		fmt.Fprintf(&b, "%-36s %s\n", id, strings.Join(pools, ", "))
	}
	report := filepath.Join(os.TempDir(), "node-rotation-transition-coverage.txt")
	_ = os.WriteFile(report, []byte(b.String()), 0o644)
	GinkgoWriter.Print(b.String())
	fmt.Fprintf(GinkgoWriter, "coverage report: %s\n", report)
	Expect(missing).To(BeEmpty(), "transitions never exercised by an envtest case")
}

// took reports whether pool's passes have taken transition id.
func (c *transitionCoverage) took(id, pool string) func() bool {
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.hits[id][pool]
	}
}
