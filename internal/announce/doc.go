// Package announce turns the table's announce steps into what an operator
// sees: the log lines with their exact messages and key fields, the
// Kubernetes Events on the object each names, and the counters and
// histogram (docs/observability.md). Level-triggered conditions are
// deduplicated (emitted on entering a condition, re-fired after it
// clears). The reconciler hands over what a step earned as soon as the
// step has run (Announcer.Earned, with a View of what the pass observed and
// the results of the steps before), and the rest once the pass has acted
// (Announcer.Pass: the Warnings of what it observed, the fact it could not
// decide on); the startup sweep says what it did through the methods of
// sweep.go (SweptClaim, the alert, among them). Every announcement has exactly one handler (handlers.go),
// checked at startup.
package announce
