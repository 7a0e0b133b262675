package metrics

import (
	"time"

	"github.com/noderotation/node-rotation-controller/engine"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/noderotation/node-rotation-controller/internal/schedule"
)

// Pool is what one pass computed about a pool, as its gauges show it: the
// same governance, census and drain facts the rules table decided on.
type Pool struct {
	Name string
	// Governance is the table's governance fact: governed, ungoverned,
	// conflict or invalid.
	Governance                                 string
	Candidates, InBackoff, ShortLead, MaxRetry int
	// InFlight: the rotations anchored on the pool, one per slot
	// (docs/design.md#throughput).
	InFlight int
	// MaxUnavailable: the number in force (0 when no valid policy
	// governs the pool).
	MaxUnavailable int
	WindowOpen     bool
	// FreezeUntil is the end of a freeze in force; zero when none.
	FreezeUntil time.Time
	// DrainStuck is the table's drainStuck fact for a draining rotation.
	DrainStuck bool
	// DrainBlocked counts the claims passed over for their drain blockers,
	// by reason (a claim blocked for both reasons counts in both); nil when
	// the pass did not look (in flight), which leaves the gauge as it was.
	DrainBlocked map[string]int
	Derivation   schedule.Derivation
	// Disrupted counts the pool's claims being disrupted, whoever started
	// it; BudgetAllowed is its budgets' allowance in force, -1 when none
	// bounds it (docs/design.md#disruption-budget).
	Disrupted, BudgetAllowed int
	// Gate is the startGate fact the pass's idle decision consulted; empty
	// when none did (a rotation in flight), which leaves the gauge as it
	// was.
	Gate string
}

// The governance fact's values the gauges tell apart.
var (
	governanceUngoverned = engine.UsesFactValue("governance", "ungoverned")
	governanceConflict   = engine.UsesFactValue("governance", "conflict")
	governanceInvalid    = engine.UsesFactValue("governance", "invalid")
)

// Record sets the pool's gauges from one pass (docs/observability.md). An
// ungoverned pool's series are dropped instead.
func Record(p Pool) {
	if p.Governance == governanceUngoverned {
		Forget(p.Name)
		return
	}
	name := p.Name
	// The counters an alert watches with increase() start at 0 with the
	// pool: a series born at its first count shows no increase for it.
	ExpiredUnrotated.WithLabelValues(name)
	WindowMissed.WithLabelValues(name)
	PolicyConflict.WithLabelValues(name).Set(b2f(p.Governance == governanceConflict || p.Governance == governanceInvalid))
	Candidates.WithLabelValues(name).Set(float64(p.Candidates))
	InBackoff.WithLabelValues(name).Set(float64(p.InBackoff))
	InProgress.WithLabelValues(name).Set(float64(p.InFlight))
	MaxUnavailable.WithLabelValues(name).Set(float64(p.MaxUnavailable))
	ShortLeadNodes.WithLabelValues(name).Set(float64(p.ShortLead))
	RetryCount.WithLabelValues(name).Set(float64(p.MaxRetry))
	if p.DrainBlocked != nil { // nil: not looked at this pass; keep the last count
		for _, reason := range DrainBlockedReasons {
			DrainBlocked.WithLabelValues(name, reason).Set(float64(p.DrainBlocked[reason]))
		}
	}
	WindowActive.WithLabelValues(name).Set(b2f(p.WindowOpen))
	freeze := 0.0
	if !p.FreezeUntil.IsZero() {
		freeze = float64(p.FreezeUntil.Unix())
	}
	FreezeUntil.WithLabelValues(name).Set(freeze)
	DrainStuck.WithLabelValues(name).Set(b2f(p.DrainStuck))
	DisruptedNodes.WithLabelValues(name).Set(float64(p.Disrupted))
	BudgetAllowed.WithLabelValues(name).Set(float64(p.BudgetAllowed))
	if p.Gate != "" {
		for _, g := range StartGates {
			StartGate.WithLabelValues(name, g).Set(b2f(g == p.Gate))
		}
	}
	derived(p)
}

// derived sets the schedule gauges: all 0 when expireAfter is Never or the
// policy is invalid; with no occurrence, only throughput_capacity is 0.
func derived(p Pool) {
	name, d := p.Name, p.Derivation
	if p.Governance == governanceInvalid || d.NoDeadline {
		for _, g := range []*prometheus.GaugeVec{AgeThreshold, RotationChances, ThroughputCapacity, TRotEstimate, TRotBound, WindowPeriod} {
			g.WithLabelValues(name).Set(0)
		}
		return
	}
	AgeThreshold.WithLabelValues(name).Set(d.A.Seconds())
	RotationChances.WithLabelValues(name).Set(float64(d.G))
	ThroughputCapacity.WithLabelValues(name).Set(float64(d.C))
	TRotEstimate.WithLabelValues(name).Set(d.TRotEst.Seconds())
	TRotBound.WithLabelValues(name).Set(d.TRot.Seconds())
	WindowPeriod.WithLabelValues(name).Set(d.Cycle.P.Seconds())
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// DrainBlockedReasons are the reason label's values (census.BlockedDoNotDisrupt
// and census.BlockedPDB; metrics does not import the census).
var DrainBlockedReasons = []string{"do-not-disrupt", "pdb"}

// StartGates are the gate label's values: the table's startGate fact
// values, each checked against the table at startup (a test holds the
// list to the table's).
var StartGates = []string{
	engine.UsesFactValue("startGate", "open"),
	engine.UsesFactValue("startGate", "windowClosed"),
	engine.UsesFactValue("startGate", "blackout"),
	engine.UsesFactValue("startGate", "windowEnding"),
	engine.UsesFactValue("startGate", "frozen"),
	engine.UsesFactValue("startGate", "cooldown"),
	engine.UsesFactValue("startGate", "failurePause"),
	engine.UsesFactValue("startGate", "clusterCap"),
	engine.UsesFactValue("startGate", "disruptionBudget"),
}
