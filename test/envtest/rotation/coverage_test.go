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
	"github.com/noderotation/node-rotation-controller/internal/table"
)

// transitionCoverage maps every transition id to the pools — one per spec —
// whose passes took it, and to the pools whose spec asserted its effect;
// it also records, per controller instance, what each instance decided.
type transitionCoverage struct {
	mu       sync.Mutex
	hits     map[string]map[string]bool // transition → pools that took it
	asserted map[string]map[string]bool // transition → pools whose spec asserted its effect
	// governance: pool → instance → the governance facts its decisions read.
	governance map[string]map[string]map[string]bool
	byInstance map[string]int // instance → decisions made
	passes     map[string]int // pool → passes (rotation-machine decisions) of every instance
}

func newCoverage() *transitionCoverage {
	return &transitionCoverage{
		hits: map[string]map[string]bool{}, asserted: map[string]map[string]bool{},
		governance: map[string]map[string]map[string]bool{}, byInstance: map[string]int{}, passes: map[string]int{},
	}
}

func (c *transitionCoverage) record(instance, pool string, d engine.Decision) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hits[d.Transition] == nil {
		c.hits[d.Transition] = map[string]bool{}
	}
	c.hits[d.Transition][pool] = true
	c.byInstance[instance]++
	if d.Machine == "rotation" {
		c.passes[pool]++
	}
	if c.governance[pool] == nil {
		c.governance[pool] = map[string]map[string]bool{}
	}
	if c.governance[pool][instance] == nil {
		c.governance[pool][instance] = map[string]bool{}
	}
	for _, f := range d.Facts {
		if f.Name == "governance" {
			c.governance[pool][instance][fmt.Sprint(f.Value)] = true
		}
	}
	c.governance[pool][instance][""] = true // any pass
}

// decisions is how many decisions instance has made.
func (c *transitionCoverage) decisions(instance string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byInstance[instance]
}

// passCount is how many passes the instances have made over pool.
func (c *transitionCoverage) passCount(pool string) func() int {
	return func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.passes[pool]
	}
}

// passed counts the instances that have decided on pool reading the
// governance fact gov ("" for any decision): evidence that they reconciled
// the pool and saw it so.
func (c *transitionCoverage) passed(pool, gov string) func() int {
	return func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		n := 0
		for _, seen := range c.governance[pool] {
			if seen[gov] {
				n++
			}
		}
		return n
	}
}

// took reports whether pool's passes have taken transition id.
func (c *transitionCoverage) took(id, pool string) func() bool {
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.hits[id][pool]
	}
}

// assertsTransition is called by a spec next to the assertions of the
// effect of transition id on pool: it waits until pool's passes took id and
// counts the transition as asserted. The coverage gate counts only these.
func assertsTransition(pool string, ids ...string) {
	GinkgoHelper()
	for _, id := range ids {
		Eventually(coverage.took(id, pool), timeout).Should(BeTrue(), "pool %s never took %s", pool, id)
		coverage.mu.Lock()
		if coverage.asserted[id] == nil {
			coverage.asserted[id] = map[string]bool{}
		}
		coverage.asserted[id][pool] = true
		coverage.mu.Unlock()
	}
}

// report lists, per transition of the shipped table, the pools whose spec
// asserted its effect, then the pools that only took it on the way, and
// returns the transitions no spec asserted.
func (c *transitionCoverage) report() (string, []string) {
	e, err := table.Load()
	Expect(err).NotTo(HaveOccurred())
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	var missing []string
	fmt.Fprintf(&b, "transition coverage of rules version %d by envtest cases (NodePool = case; [asserted] then (only taken))\n", e.Version())
	for _, id := range e.TransitionIDs() {
		var asserted, taken []string
		for p := range c.hits[id] {
			if c.asserted[id][p] {
				asserted = append(asserted, p)
			} else {
				taken = append(taken, p)
			}
		}
		sort.Strings(asserted)
		sort.Strings(taken)
		if len(asserted) == 0 {
			missing = append(missing, id)
		}
		fmt.Fprintf(&b, "%-36s [%s] (%s)\n", id, strings.Join(asserted, ", "), strings.Join(taken, ", "))
	}
	return b.String(), missing
}

// check prints the coverage report (go test -v shows it), writes it to a
// file, and fails when a transition of the shipped table has no spec that
// asserted its effect on a pool that took it.
func (c *transitionCoverage) check() {
	report, missing := c.report()
	path := filepath.Join(os.TempDir(), "node-rotation-transition-coverage.txt")
	_ = os.WriteFile(path, []byte(report), 0o644)
	fmt.Fprintf(os.Stdout, "\n%scoverage report: %s\n", report, path)
	Expect(missing).To(BeEmpty(), "transitions no envtest case asserted the effect of")
}
