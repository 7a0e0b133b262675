// Package conditional is the one conditional write of the controller: read
// the object (fresh, bypassing the cache), let the caller check its
// precondition on that copy and change it, and patch only what changed with
// the copy's resourceVersion as an optimistic lock. Both the actions and
// the startup sweep write through it, so "who won this write" means the same
// everywhere (docs/design.md#anchor-protocol).
package conditional
