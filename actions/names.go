package actions

// The names of the actions the rules table may name (rules/rotation.yaml's
// steps): Go code that reads a step's results names the action by one of
// these, so a rename is one edit here and a catalog the table no longer
// loads against, never a string that silently matches nothing.
const (
	ActionAnchorWrite       = "anchor-write"
	ActionAnchorRelease     = "anchor-release"
	ActionAnchorClear       = "anchor-clear"
	ActionPoolMirror        = "pool-mirror"
	ActionClaimState        = "claim-state"
	ActionClaimDelete       = "claim-delete"
	ActionSurgeClaimPersist = "surge-claim-persist"
	ActionSurgeClaimReap    = "surge-claim-reap"
	ActionFreeze            = "freeze"
	ActionUnfreeze          = "unfreeze"
	ActionCordon            = "cordon"
	ActionUncordon          = "uncordon"
	ActionPlaceholderEnsure = "placeholder-ensure"
	ActionPlaceholderDelete = "placeholder-delete"
	ActionPrePullEnsure     = "prepull-ensure"
	ActionPrePullDelete     = "prepull-delete"
	ActionPrePullRecord     = "prepull-record"
	ActionWindowStamp       = "window-stamp"
	ActionWindowClear       = "window-clear"
	ActionRepairStranded    = "repair-stranded"
	ActionLossRecord        = "loss-record"
	ActionAnnounce          = "announce"
)
