// Package engine loads the transition table of package rules, compiles its
// CEL facts and guards once, proves the table complete, deterministic and
// free of dead rows, and decides the transition for an observed snapshot.
package engine
