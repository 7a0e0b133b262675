// Package census classifies the NodeClaims of a governed NodePool and picks
// the rotation candidate: each claim's deadline and age trigger, its backoff
// after a failed attempt, its census class (candidate, in backoff, in
// flight, not due, opted out, …) and the earliest-deadline eligible claim
// (docs/design.md#age-threshold). It is the one place that parses a claim's
// failed-at and retry-count; the rules table reads what it computed.
//
// The package reads no cluster: the observer hands it the claims, the
// resolved policy and a lookup of operator opt-outs.
package census
