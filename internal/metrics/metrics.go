// Package metrics defines the Prometheus metrics of docs/observability.md,
// registered once per process on controller-runtime's registry and served
// by the manager's metrics endpoint. Counters and the histogram are
// incremented only by the pass whose write earned the announcement; gauges
// are set from what each pass computed for the table, and their series are
// dropped with the pool.
package metrics

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

const ns = "noderotation"

var pool = []string{"nodepool"}

func gauge(name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, pool)
}

var (
	Candidates         = gauge("candidates", "Eligible NodeClaims per pool.")
	InBackoff          = gauge("in_backoff", "NodeClaims past the age trigger held out of the candidates only by their escalated retryBackoff.")
	InProgress         = gauge("in_progress", "Rotations in flight per pool (at most its max_unavailable).")
	MaxUnavailable     = gauge("max_unavailable", "Rotations the pool may have in flight at once: spec.surge.maxUnavailable resolved for the pool (a percentage of its nodes, or auto).")
	WindowActive       = gauge("window_active", "1 while the pool's maintenance window is open.")
	PolicyConflict     = gauge("policy_conflict", "1 while the pool is blocked by a selector tie or an invalid policy.")
	FreezeUntil        = gauge("freeze_until_timestamp", "Unix time the pool's freeze ends (0 = none).")
	AgeThreshold       = gauge("age_threshold_seconds", "The age threshold A (0 when expireAfter is Never).")
	RotationChances    = gauge("rotation_chances", "The guaranteed chances G (0 when expireAfter is Never).")
	ThroughputCapacity = gauge("throughput_capacity", "The layer-2 forecast C: starts per occurrence (0 without an occurrence).")
	TRotEstimate       = gauge("t_rot_estimate_seconds", "Forecast service time t_rot_est = provisioningEstimate + drainEstimate.")
	TRotBound          = gauge("t_rot_bound_seconds", "Deadline-side bound t_rot = readyTimeout + tGP + buffer.")
	WindowPeriod       = gauge("window_period_seconds", "The worst-case period P.")
	ShortLeadNodes     = gauge("short_lead_nodes", "NodeClaims whose own expireAfter can no longer guarantee K chances.")
	DrainStuck         = gauge("drain_stuck", "1 while the in-flight drain exceeds tGP + buffer.")
	RetryCount         = gauge("retry_count", "Highest retry-count across the pool's NodeClaims.")
	DisruptedNodes     = gauge("disrupted_nodes", "NodeClaims of the pool being disrupted, by Karpenter's drift, consolidation or repair, an operator's delete, a NotReady node or a rotation, each once: what the disruptionBudget start gate counts (the pool's rotations alone under nodePoolBudgets: Ignore).")
	BudgetAllowed      = gauge("budget_allowed_disruptions", "The strictest of the NodePool's spec.disruption.budgets in force, as Karpenter computes it (-1 when none is in force, or the policy says nodePoolBudgets: Ignore).")
	StartGate          = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "start_gate", Help: "1 for the start gate that held or let through the pool's last idle pass (the rules table's startGate fact: open, windowClosed, blackout, windowEnding, frozen, cooldown, failurePause, clusterCap, disruptionBudget), 0 for the others; kept while a rotation is in flight."}, []string{"nodepool", "gate"})
	DrainBlocked       = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "drain_blocked_nodes", Help: "Eligible NodeClaims passed over because Pods on their node would block Karpenter's drain, by reason (do-not-disrupt, pdb)."}, []string{"nodepool", "reason"})
	Completed          = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "completed_total", Help: "Completed rotations by outcome (success, failure, expired)."}, []string{"nodepool", "outcome"})
	ForcefulFallback   = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "forceful_fallback_total", Help: "Surge-less forceful-fallback rotations started."}, pool)
	WindowMissed       = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "window_missed_total", Help: "Window occurrences that closed with work outstanding and no rotation attributable to them succeeding."}, pool)
	ExpiredUnrotated   = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "expired_unrotated_total", Help: "NodeClaims of a governed pool that Karpenter deleted for expiry with no rotation of them in flight: the outcome the controller exists to prevent."}, pool)
	Duration           = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: "duration_seconds", Help: "Rotation phase durations: surge_wait (started-at → surge ready), prepull (draining-at → the pre-pull phase's end, when spec.prePull is on) and drain (the surge ready or the pre-pull's end → old NodeClaim gone).", Buckets: []float64{5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200}}, []string{"nodepool", "phase"})
	RulesInfo          = prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: "rules_info", Help: "The version of the transition table in force (value 1)."}, []string{"version"})
	perPoolGauges      = []*prometheus.GaugeVec{Candidates, InBackoff, InProgress, MaxUnavailable, WindowActive, PolicyConflict, FreezeUntil, AgeThreshold, RotationChances, ThroughputCapacity, TRotEstimate, TRotBound, WindowPeriod, ShortLeadNodes, DrainStuck, RetryCount, DisruptedNodes, BudgetAllowed}
	registerOnce       sync.Once
)

// All lists every collector, for registration and the documentation test.
func All() []prometheus.Collector {
	out := []prometheus.Collector{Completed, ForcefulFallback, WindowMissed, ExpiredUnrotated, Duration, RulesInfo, DrainBlocked, StartGate}
	for _, g := range perPoolGauges {
		out = append(out, g)
	}
	return out
}

// Register adds every collector to controller-runtime's registry, once per
// process, and records the rules version.
func Register(rulesVersion int) {
	registerOnce.Do(func() {
		crmetrics.Registry.MustRegister(All()...)
	})
	RulesInfo.Reset()
	RulesInfo.WithLabelValues(strconv.Itoa(rulesVersion)).Set(1)
}

// Forget drops every series of a pool: deleted, or no longer governed.
func Forget(nodepool string) {
	for _, g := range perPoolGauges {
		g.DeleteLabelValues(nodepool)
	}
	Completed.DeletePartialMatch(prometheus.Labels{"nodepool": nodepool})
	ForcefulFallback.DeleteLabelValues(nodepool)
	WindowMissed.DeleteLabelValues(nodepool)
	ExpiredUnrotated.DeleteLabelValues(nodepool)
	Duration.DeletePartialMatch(prometheus.Labels{"nodepool": nodepool})
	DrainBlocked.DeletePartialMatch(prometheus.Labels{"nodepool": nodepool})
	StartGate.DeletePartialMatch(prometheus.Labels{"nodepool": nodepool})
}
