// Package announce turns the table's announce steps into what an operator
// sees: the §4.2 log lines with their exact messages and key fields, and the
// §4.2 Kubernetes Events on the object each names, deduplicated (emitted on
// entering a condition, re-fired after it clears).
package announce
