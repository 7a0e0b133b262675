package actions

import (
	"context"
	"slices"

	"github.com/noderotation/node-rotation-controller/engine"
)

// Announcement names what an announce step tells the operator: a metric,
// an Event and a log line of docs/observability.md.
type Announcement string

// The announcements a step may make. The announcer implements every one;
// the controller refuses to start when one is missing.
const (
	RotationStarted      Announcement = "RotationStarted"
	ForcefulFallback     Announcement = "ForcefulFallback"
	NoCandidate          Announcement = "NoCandidate"
	InsufficientHeadroom Announcement = "InsufficientHeadroom"
	StaticNodePool       Announcement = "StaticNodePool"
	PolicyConflict       Announcement = "PolicyConflict"
	PolicyInvalid        Announcement = "PolicyInvalid"
	Infeasible           Announcement = "Infeasible"
	PlaceholderCreated   Announcement = "PlaceholderCreated"
	SurgeWaiting         Announcement = "SurgeWaiting"
	SurgeReady           Announcement = "SurgeReady"
	DrainStarted         Announcement = "DrainStarted"
	RotationFailed       Announcement = "RotationFailed"
	RotationExpired      Announcement = "RotationExpired"
	RotationCompleted    Announcement = "RotationCompleted"
	GovernanceLost       Announcement = "GovernanceLost"
	WindowMissed         Announcement = "WindowMissed"
	DrainStuck           Announcement = "DrainStuck"
	AnchorRestored       Announcement = "AnchorRestored"
	StrandedRepaired     Announcement = "StrandedRepaired"
	OrphanedAnchor       Announcement = "OrphanedAnchor"
	DrainBlocked         Announcement = "DrainBlocked"
	SurgeUnservable      Announcement = "SurgeUnservable"
	WindowEnding         Announcement = "WindowEnding"
	ClusterCap           Announcement = "ClusterCap"
	DisruptionBudget     Announcement = "DisruptionBudget"
	RotationRequested    Announcement = "RotationRequested"
	SkipHeld             Announcement = "SkipHeld"
	ExpiredUnrotated     Announcement = "ExpiredUnrotated"
	PrePullStarted       Announcement = "PrePullStarted"
	PrePullEnded         Announcement = "PrePullEnded"
	PrePullRefused       Announcement = "PrePullRefused"
)

// Announcements is every announcement, in the catalog's order.
var Announcements = []Announcement{
	RotationStarted, ForcefulFallback, NoCandidate, InsufficientHeadroom, StaticNodePool,
	PolicyConflict, PolicyInvalid, Infeasible, PlaceholderCreated, SurgeWaiting,
	SurgeReady, DrainStarted, RotationFailed, RotationExpired, RotationCompleted,
	GovernanceLost, WindowMissed, DrainStuck, AnchorRestored, StrandedRepaired, OrphanedAnchor,
	DrainBlocked, SurgeUnservable, WindowEnding, ClusterCap, RotationRequested, SkipHeld,
	ExpiredUnrotated, PrePullStarted, PrePullEnded, PrePullRefused, DisruptionBudget,
}

var announceAction = action{
	spec: engine.ActionSpec{Name: ActionAnnounce, Role: engine.RoleAnnounce,
		Description: "tell the operator what the write before it earned: the metric, Event and log line of docs/observability.md for what; with onlyIfChanged, only when the step before it changed something in this pass",
		Args:        map[string]engine.ArgSpec{"what": required(str(names(Announcements)...)), "onlyIfChanged": flag}},
	run: announce,
}

// announce records what the step earned; it writes nothing, and RunFrom
// returns right after it so the reconciler says it before the next step
// runs. It
// needs no confirmed election: an announcement an electing write earns
// follows one that changes its object (the server answered it);
// PlaceholderCreated, DrainStarted and StrandedRepaired follow a create or
// delete only one pass can make (onlyIfChanged); the others (SurgeWaiting,
// the idle findings) are said once by the announcer's own memory.
func announce(_ context.Context, p *Pass, args map[string]any) (Result, error) {
	what, _ := args["what"].(string)
	if args["onlyIfChanged"] == true && !changedBefore(p.Results) {
		return Result{Outcome: Done, Did: "not announced " + what + ": the step before it changed nothing"}, nil
	}
	p.earned = append(p.earned, Earned{What: Announcement(what), Before: slices.Clone(p.Results)})
	return Result{Outcome: Done, Did: "announced " + what}, nil
}

func names(as []Announcement) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a)
	}
	return out
}

// changedBefore reports whether the last step before this announcement
// (announcements aside) changed something.
func changedBefore(results []Result) bool {
	for i := len(results) - 1; i >= 0; i-- {
		if results[i].Action != ActionAnnounce {
			return results[i].Changed
		}
	}
	return false
}
