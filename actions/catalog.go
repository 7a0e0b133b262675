package actions

import "github.com/noderotation/node-rotation-controller/engine"

// ClaimStates are the values of the noderotation.io/state annotation.
var ClaimStates = []string{"none", "pending", "draining", "failed", "expired"}

// Announcements are the things a step may announce; each maps to the
// metric, Event and log line of §4.2 that the observability layer emits.
var Announcements = []string{
	"RotationStarted", "ForcefulFallback", "NoCandidate", "InsufficientHeadroom", "StaticNodePool",
	"PolicyConflict", "PolicyInvalid", "Infeasible", "PlaceholderCreated", "SurgeWaiting",
	"SurgeReady", "DrainStarted", "RotationFailed", "RotationExpired", "RotationCompleted",
	"GovernanceLost", "WindowMissed", "DrainStuck",
}

// Catalog is the fixed set of actions the rules table may name, with the
// arguments each accepts. Every action is idempotent and reports what it
// did; those marked Reports tell a step whether this pass won its write.
func Catalog() engine.Catalog {
	str := func(values ...string) engine.ArgSpec { return engine.ArgSpec{Kind: engine.ArgString, Values: values} }
	req := func(a engine.ArgSpec) engine.ArgSpec { a.Required = true; return a }
	list := func(values ...string) engine.ArgSpec {
		return engine.ArgSpec{Kind: engine.ArgStringList, Values: values}
	}
	flag := engine.ArgSpec{Kind: engine.ArgBool}
	specs := []engine.ActionSpec{
		{Name: "anchor-write", Role: engine.RoleAnchorWrite, Reports: true,
			Description: "write noderotation.io/active-rotation on the NodePool, only if absent, conflict-checked; mode forcefulFallback also writes rotation-mode, the draining mirror and draining-at in the same write",
			Args:        map[string]engine.ArgSpec{"mode": req(str("surge", "forcefulFallback"))}},
		{Name: "anchor-release", Role: engine.RoleAnchorEnd, Reports: true,
			Description: "completion: one conditional write, only while the anchor names this rotation, that reads the outcome (draining mirror → success) from the same fresh copy, stamps last-rotation-at on success and clears the rotation-scoped set"},
		{Name: "anchor-clear", Role: engine.RoleAnchorEnd, Reports: true,
			Description: "clear the rotation-scoped set (active-rotation, active-rotation-state, draining-at, surge-wait, rotation-mode) only while the anchor names this rotation; optionally stamp last-failure-at (now, or max with the claim's failed-at)",
			Args:        map[string]engine.ArgSpec{"lastFailureAt": str("now", "max")}},
		{Name: "claim-state", Reports: true,
			Description: "write the old NodeClaim's noderotation.io/state (to none removes it), accepting only the listed pre-states (from absent: unconditional); reports claimed, raced or gone",
			Args: map[string]engine.ArgSpec{
				"from": list(ClaimStates...), "to": req(str(ClaimStates...)),
				"stampStartedAtOnce": flag, "stampFailedAt": flag, "incrementRetry": flag,
				"clear": list("startedAt", "surgeClaim"),
			}},
		{Name: "pool-mirror", Description: "write the NodePool's draining mirror (active-rotation-state=draining); optionally draining-at and surge-wait, once",
			Args: map[string]engine.ArgSpec{"drainingAt": flag, "surgeWait": flag}},
		{Name: "freeze", Description: "karpenter.sh/do-not-disrupt=true plus do-not-disrupt-owned (only when we set it) and surge-for on a node",
			Args: map[string]engine.ArgSpec{"node": req(str("old", "surgeHost"))}},
		{Name: "unfreeze", Description: "remove our do-not-disrupt (by the owned marker) and surge-for from every node paired with the rotation"},
		{Name: "cordon", Description: "set spec.unschedulable on the old node with our cordoned marker, unless someone else cordoned it"},
		{Name: "uncordon", Description: "undo our cordon of the old node (by the cordoned marker only)"},
		{Name: "placeholder-ensure", Description: "create the surge placeholder Pod if it does not exist"},
		{Name: "placeholder-delete", Description: "delete the surge placeholder Pod if it exists"},
		{Name: "claim-delete", Description: "delete the old NodeClaim (Karpenter's voluntary path; PDBs apply)"},
		{Name: "surge-claim-persist", Description: "record the induced surge NodeClaim on the old claim once the placeholder's node is observable"},
		{Name: "surge-claim-reap", Description: "delete the induced surge NodeClaim, only if created after started-at and its node hosts nothing but the placeholder and DaemonSet Pods"},
		{Name: "window-stamp", Description: "stamp noderotation.io/window-opened-at on the NodePool, only if absent"},
		{Name: "window-clear", Reports: true, Description: "clear window-opened-at, conditional on the stamp this pass read; reports whether this pass cleared it"},
		{Name: "announce", Role: engine.RoleAnnounce, Description: "emit the metric, Event and log line of §4.2 for what",
			Args: map[string]engine.ArgSpec{"what": req(str(Announcements...))}},
	}
	c := engine.Catalog{}
	for _, s := range specs {
		c[s.Name] = s
	}
	return c
}
