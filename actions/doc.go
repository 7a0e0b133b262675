// Package actions is the fixed set of idempotent steps a transition of the
// rules table may name — anchor write/release/clear, conditional
// claim-state writes, the draining mirror, freeze and cordon, the
// placeholder, the claim delete and the surge-claim reap, the window stamps
// — and the announce step, which writes nothing: it records what the steps
// before it earned, and RunFrom returns right after it for the reconciler
// to say before the next step runs.
//
// Each action's contract (its catalog entry: arguments, role, whether it
// reports an outcome to elect on) sits beside its body, in the file of its
// object. An action writes only the targets the reconciler gives it
// (Targets): it never reads the observation.
package actions
