package simulate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/noderotation/node-rotation-controller/internal/budget"

	"github.com/noderotation/node-rotation-controller/internal/plan"
)

// Fleet is the fleet file: the NodePools to simulate and how their nodes
// behave (docs/policy.md#the-fleet-file).
type Fleet struct {
	// Start is when the simulation begins; the nodes' ages are as of Start.
	Start time.Time `json:"start"`
	// Span is how long it runs (default 4 weeks).
	Span  Duration `json:"span,omitempty"`
	Pools []Pool   `json:"pools"`
}

// Pool is one NodePool and its nodes.
type Pool struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Nodes  int               `json:"nodes"`
	// ExpireAfter is the template's expireAfter ("Never" for none); the
	// default is Karpenter's, 720h.
	ExpireAfter            string   `json:"expireAfter,omitempty"`
	TerminationGracePeriod Duration `json:"terminationGracePeriod,omitempty"`
	// EKSAutoMode puts the pool on an EKS Auto Mode NodeClass (its
	// template's nodeClassRef group eks.amazonaws.com): 21 days at most.
	EKSAutoMode bool `json:"eksAutoMode,omitempty"`
	// Age spreads the nodes' ages at Start evenly over [min, max]; one
	// value gives every node the same age (a burst sharing one deadline).
	Age Range `json:"age"`
	// Created, instead of Age, gives the nodes' creation times: count
	// nodes (default 1) created at each instant, at or before Start.
	Created []Created `json:"created,omitempty"`
	// Launch is how long a NodeClaim takes to launch, Boot how long its
	// node then takes to become Ready, Drain how long Karpenter's drain of
	// a deleted claim takes.
	Launch Range `json:"launch,omitempty"`
	Boot   Range `json:"boot,omitempty"`
	Drain  Range `json:"drain,omitempty"`
	// LaunchFailureRate is the chance that one launch fails (Karpenter
	// deletes the claim and launches another); StuckDrainRate the chance
	// that a drain runs to the terminationGracePeriod.
	LaunchFailureRate float64 `json:"launchFailureRate,omitempty"`
	StuckDrainRate    float64 `json:"stuckDrainRate,omitempty"`
	// NeverLaunch: every launch fails (a NodePool Karpenter cannot serve).
	NeverLaunch bool `json:"neverLaunch,omitempty"`
	// Budgets are the NodePool's spec.disruption.budgets, read by the
	// controller's start gate and forecast as on a cluster; absent,
	// Karpenter's default (nodes: 10%); an empty list, none.
	Budgets *[]karpv1.Budget `json:"budgets,omitempty"`
}

// Created is a number of nodes created at one instant.
type Created struct {
	At    time.Time `json:"at"`
	Count int       `json:"count,omitempty"`
}

// Duration is a duration written as "14d", "1h30m" or "2w".
type Duration struct{ time.Duration }

// UnmarshalJSON reads a duration string with day and week units.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as 14d or 1h30m")
	}
	v, err := parseDuration(s)
	d.Duration = v
	return err
}

// MarshalJSON writes the duration back in Go's notation.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// Range is a uniform distribution over [Min, Max]; written either as one
// duration ("3m") or as {min: 1m, max: 5m}.
type Range struct{ Min, Max time.Duration }

// UnmarshalJSON reads "3m" or {min, max}.
func (r *Range) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		d, err := parseDuration(s)
		r.Min, r.Max = d, d
		return err
	}
	var mm struct{ Min, Max Duration }
	if err := json.Unmarshal(b, &mm); err != nil {
		return fmt.Errorf("want a duration or {min: D, max: D}")
	}
	r.Min, r.Max = mm.Min.Duration, mm.Max.Duration
	if r.Max < r.Min {
		return fmt.Errorf("max %s is below min %s", r.Max, r.Min)
	}
	return nil
}

// MarshalJSON writes {min, max}.
func (r Range) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"min": r.Min.String(), "max": r.Max.String()})
}

func (r Range) zero() bool { return r.Min == 0 && r.Max == 0 }

func parseDuration(s string) (time.Duration, error) {
	if len(s) > 1 && s[len(s)-1] == 'w' {
		d, err := plan.ParseDuration(s[:len(s)-1] + "d")
		return 7 * d, err
	}
	d, err := plan.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want a duration such as 14d, 2w or 1h30m", s)
	}
	return d, nil
}

// DefaultSpan is four weeks.
const DefaultSpan = 28 * 24 * time.Hour

// The defaults of a pool's timings: Karpenter's typical launch and boot on
// a cloud, and a drain of a few minutes.
var (
	defaultLaunch = Range{45 * time.Second, 90 * time.Second}
	defaultBoot   = Range{30 * time.Second, 60 * time.Second}
	defaultDrain  = Range{2 * time.Minute, 5 * time.Minute}
)

// LoadFleet reads and checks a fleet file; errors name the file and field.
func LoadFleet(path string) (Fleet, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Fleet{}, fmt.Errorf("%s: %w", path, errors.Unwrap(err))
	}
	var f Fleet
	if err := sigsyaml.UnmarshalStrict(raw, &f); err != nil {
		return Fleet{}, fmt.Errorf("%s: %v", path, err)
	}
	if err := f.check(); err != nil {
		return Fleet{}, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// check fills the defaults and rejects what cannot be simulated.
func (f *Fleet) check() error {
	if f.Span.Duration == 0 {
		f.Span.Duration = DefaultSpan
	}
	if f.Span.Duration < 0 {
		return fmt.Errorf("span: must be positive")
	}
	if len(f.Pools) == 0 {
		return fmt.Errorf("pools: at least one pool is needed")
	}
	seen := map[string]bool{}
	for i := range f.Pools {
		p := &f.Pools[i]
		if err := p.checkCreated(f.Start); err != nil {
			return fmt.Errorf("pools[%d] (%s): %w", i, p.Name, err)
		}
		if err := p.check(); err != nil {
			return fmt.Errorf("pools[%d] (%s): %w", i, p.Name, err)
		}
		if seen[p.Name] {
			return fmt.Errorf("pools[%d]: name %q is used twice", i, p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}

func (p *Pool) check() error {
	switch {
	case p.Name == "":
		return fmt.Errorf("name: required")
	case p.Nodes <= 0:
		return fmt.Errorf("nodes: must be at least 1")
	case p.LaunchFailureRate < 0 || p.LaunchFailureRate >= 1:
		return fmt.Errorf("launchFailureRate: want 0 ≤ rate < 1")
	case p.StuckDrainRate < 0 || p.StuckDrainRate > 1:
		return fmt.Errorf("stuckDrainRate: want 0 ≤ rate ≤ 1")
	case p.StuckDrainRate > 0 && p.TerminationGracePeriod.Duration <= 0:
		return fmt.Errorf("stuckDrainRate: a stuck drain runs to terminationGracePeriod, which is unset")
	}
	if p.ExpireAfter == "" {
		p.ExpireAfter = "720h"
	}
	if p.Budgets == nil {
		b := plan.DefaultBudgets()
		p.Budgets = &b
	}
	for i, b := range *p.Budgets {
		if err := budget.Check(b); err != nil {
			return fmt.Errorf("budgets[%d]: %w", i, err)
		}
	}
	if _, err := p.expireAfter(); err != nil {
		return err
	}
	for _, d := range []struct {
		r   *Range
		def Range
	}{{&p.Launch, defaultLaunch}, {&p.Boot, defaultBoot}, {&p.Drain, defaultDrain}} {
		if d.r.zero() {
			*d.r = d.def
		}
	}
	return nil
}

// checkCreated checks explicit creation times against the start and sets
// the node count from them.
func (p *Pool) checkCreated(start time.Time) error {
	if len(p.Created) == 0 {
		return nil
	}
	if p.Age != (Range{}) {
		return fmt.Errorf("age and created: give one of them")
	}
	n := 0
	for i := range p.Created {
		c := &p.Created[i]
		if c.Count == 0 {
			c.Count = 1
		}
		if c.Count < 0 || c.At.IsZero() || (!start.IsZero() && c.At.After(start)) {
			return fmt.Errorf("created[%d]: want a positive count and a time at or before the start", i)
		}
		n += c.Count
	}
	if p.Nodes != 0 && p.Nodes != n {
		return fmt.Errorf("nodes %d: created lists %d", p.Nodes, n)
	}
	p.Nodes = n
	return nil
}

// creationTimes are the nodes' creation times as of start, oldest first
// when spread by age.
func (p Pool) creationTimes(start time.Time) []time.Time {
	var out []time.Time
	if len(p.Created) > 0 {
		for _, c := range p.Created {
			for range c.Count {
				out = append(out, c.At)
			}
		}
		return out
	}
	for i := range p.Nodes {
		age := p.Age.Min
		if p.Nodes > 1 {
			age += time.Duration(float64(p.Age.Max-p.Age.Min) * float64(i) / float64(p.Nodes-1))
		}
		out = append(out, start.Add(-age))
	}
	return out
}

// expireAfter is the pool's E; nil for Never.
func (p Pool) expireAfter() (*time.Duration, error) {
	if p.ExpireAfter == "Never" {
		return nil, nil
	}
	d, err := parseDuration(p.ExpireAfter)
	if err != nil || d <= 0 {
		return nil, fmt.Errorf("expireAfter %q: want a positive duration or Never", p.ExpireAfter)
	}
	return &d, nil
}
