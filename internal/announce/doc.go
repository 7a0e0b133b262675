// Package announce turns the table's announce steps into what an operator
// sees: the log lines with their exact messages and key fields, the
// Kubernetes Events on the object each names, and the counters and
// histogram (docs/observability.md). Level-triggered conditions are
// deduplicated (emitted on entering a condition, re-fired after it
// clears). The reconciler hands each announce step over with the
// observation and the results of the steps before it; every announcement
// has exactly one handler (handlers.go), checked at startup.
package announce
