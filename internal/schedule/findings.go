package schedule

import (
	"fmt"
	"time"
)

// Severity of a finding: a fatal finding blocks rotation starts for the pool
// (logged, not evented); a warning is an Event on the NodePool; an info is
// shown by the tools (plan, explain) only — true of a healthy pool with
// Karpenter's defaults, so never an Event (docs/design.md#findings).
type Severity string

const (
	Fatal   Severity = "Fatal"
	Warning Severity = "Warning"
	Info    Severity = "Info"
)

// EKSAutoModeLifetime is EKS Auto Mode's node lifetime cap
// (expireAfter + tGP ≤ 21d): Inputs.LifetimeCap of a pool on its NodeClass.
const EKSAutoModeLifetime = 21 * 24 * time.Hour

// Finding is one feasibility result (docs/design.md#findings).
type Finding struct {
	Layer    int      `json:"layer"`
	Reason   string   `json:"reason"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	Remedy   string   `json:"remedy"`
}

// Population is what layer 2 needs to know about the pool's claims: how many
// there are, and the largest number whose deadlines fall within one period P
// of each other (they compete for the same K occurrences).
type Population struct {
	Nodes int
	Burst int
}

// Findings evaluates layers 1 and 2 for one pool. Layer 3 is per claim
// (Derivation.ShortLead).
func Findings(in Inputs, d Derivation, pop Population) []Finding {
	f := layer1(in, d)
	if !d.NoDeadline && d.Cycle.HasOccurrence && d.A > 0 {
		f = append(f, layer2(in, d, pop)...)
	}
	return f
}

// HasFatal reports whether any finding is fatal.
func HasFatal(findings []Finding) bool {
	for _, f := range findings {
		if f.Severity == Fatal {
			return true
		}
	}
	return false
}

func layer1(in Inputs, d Derivation) []Finding {
	var out []Finding
	add := func(cond bool, sev Severity, reason, msg, remedy string) {
		if cond {
			out = append(out, Finding{Layer: 1, Reason: reason, Severity: sev, Message: msg, Remedy: remedy})
		}
	}
	k := in.MinRotationChances
	fd := FormatDuration
	add(!d.Cycle.HasOccurrence, Fatal, "NoWindows", "the maintenance windows never open",
		"add at least one maintenanceWindows entry with one or more days")
	add(d.Cycle.HasOccurrence && d.StartHold > 0 && d.StartHold >= d.Cycle.D, Warning, "StartHoldCoversWindow",
		fmt.Sprintf("startCutoff would hold the last %s of every occurrence, and the shortest lasts %s: in occurrences that short nothing is held and rotations run past the close", fd(d.StartHold), fd(d.Cycle.D)),
		"raise surge.startCutoff, lengthen the windows, or lower the estimates")
	add(k < 1, Fatal, "MinRotationChancesBelowOne", fmt.Sprintf("minRotationChances is %d; the floor is 1", k),
		"set minRotationChances to 2 or more")
	add(k == 1, Warning, "KBelowTwo", "minRotationChances is 1: a single failed window leaves the node to forceful expiration",
		"set minRotationChances to 2 or more")
	timed := !d.NoDeadline && d.Cycle.HasOccurrence
	if timed {
		e := *in.ExpireAfter
		add(d.A <= 0, Fatal, "AgeThresholdNotPositive",
			fmt.Sprintf("age threshold A = %s is not positive (E = %s, lead time K·P + t_rot = %s)", fd(d.A), fd(e), fd(d.Lead)),
			"raise expireAfter, add window occurrences to shorten P, or lower minRotationChances")
		add(d.A > 0 && d.A < d.Cycle.P, Warning, "AVeryAggressive",
			fmt.Sprintf("age threshold A = %s is shorter than the window period P = %s: nodes rotate soon after they are created", fd(d.A), fd(d.Cycle.P)),
			"raise expireAfter or add window occurrences")
		add(!d.Derived && d.G < 1, Fatal, "OverrideGBelowOne",
			fmt.Sprintf("the ageThreshold override %s leaves no guaranteed rotation chance before the deadline", fd(d.A)),
			"lower ageThreshold or use auto")
		add(!d.Derived && d.G >= 1 && d.G < k, Warning, "OverrideGBelowK",
			fmt.Sprintf("the ageThreshold override %s guarantees %d chance(s), fewer than minRotationChances %d", fd(d.A), d.G, k),
			"lower ageThreshold or use auto")
		life := e
		if !d.TGPUnset {
			life += d.TGP
		}
		add(in.LifetimeCap > 0 && life > in.LifetimeCap, Warning, "HardCapExceeded",
			fmt.Sprintf("expireAfter + terminationGracePeriod = %s exceeds the %s node lifetime cap of EKS Auto Mode (the NodePool's nodeClassRef is an EKS Auto Mode NodeClass)", fd(life), fd(in.LifetimeCap)),
			"keep expireAfter + terminationGracePeriod at or below "+fd(in.LifetimeCap))
	}
	add(d.TGPUnset, Info, "TGPUnset", fmt.Sprintf("terminationGracePeriod is unset (Karpenter's default: a drain may wait on PodDisruptionBudgets indefinitely); t_rot assumes %s", fd(TGPFallback)),
		"set terminationGracePeriod on the NodePool template to bound the drain")
	add(in.RetryBackoff < in.ReadyTimeout, Warning, "RetryBackoffShort",
		fmt.Sprintf("retryBackoff %s is shorter than readyTimeout %s", fd(in.RetryBackoff), fd(in.ReadyTimeout)),
		"set retryBackoff to at least readyTimeout")
	add(d.DrainEstimate > d.TGP, Warning, "DrainEstimateAboveTGP",
		fmt.Sprintf("drainEstimate %s exceeds terminationGracePeriod %s", fd(d.DrainEstimate), fd(d.TGP)),
		"lower drainEstimate to at most terminationGracePeriod")
	add(d.ProvisioningEstimate > in.ReadyTimeout, Warning, "ProvisioningEstimateAboveReadyTimeout",
		fmt.Sprintf("provisioningEstimate %s exceeds readyTimeout %s", fd(d.ProvisioningEstimate), fd(in.ReadyTimeout)),
		"lower provisioningEstimate or raise readyTimeout")
	return out
}

func layer2(in Inputs, d Derivation, pop Population) []Finding {
	var out []Finding
	fd := FormatDuration
	// C < N·P/A, kept in integers: C·A < N·P.
	if pop.Nodes > 0 && float64(d.C)*float64(d.A) < float64(pop.Nodes)*float64(d.Cycle.P) {
		out = append(out, Finding{Layer: 2, Reason: "ThroughputBelowArrival", Severity: Warning,
			Message: fmt.Sprintf("capacity C = %d starts per occurrence is below the arrival rate N·P/A = %.2f (N = %d, P = %s, A = %s)",
				d.C, float64(pop.Nodes)*float64(d.Cycle.P)/float64(d.A), pop.Nodes, fd(d.Cycle.P), fd(d.A)),
			Remedy: "lengthen the windows, shorten cooldownAfter or the estimates, or add occurrences"})
	}
	if k := in.MinRotationChances; pop.Burst > 0 && k*d.C < pop.Burst {
		out = append(out, Finding{Layer: 2, Reason: "ThroughputBurstShortfall", Severity: Warning,
			Message: fmt.Sprintf("%d nodes have their deadlines within one window period P, but K·C = %d·%d = %d rotations fit before them", pop.Burst, k, d.C, k*d.C),
			Remedy:  "raise minRotationChances, lengthen the windows, or stagger node creation"})
	}
	if !d.Cycle.AlwaysOpen && d.TRotEst+in.CooldownAfter > d.Cycle.Gap {
		out = append(out, Finding{Layer: 2, Reason: "RotationSpansNextWindow", Severity: Warning,
			Message: fmt.Sprintf("t_rot_est + cooldownAfter = %s exceeds the shortest gap between occurrences %s",
				fd(d.TRotEst+in.CooldownAfter), fd(d.Cycle.Gap)),
			Remedy: "merge close windows or shorten cooldownAfter"})
	}
	return out
}
