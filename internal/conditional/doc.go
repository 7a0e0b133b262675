// Package conditional is the one conditional write of the controller: let
// the caller check its precondition on a copy of the object and change it,
// and patch only what changed with the copy's resourceVersion as an
// optimistic lock. The passes decide on their cached copy and stop on a
// conflict (WriteFromCache, docs/design.md#cache-based-writes); the startup
// sweep and the recovery steps validate against a fresh read (Write). Both
// go through the same attempt, so "who won this write" means the same
// everywhere (docs/design.md#anchor-protocol).
package conditional
