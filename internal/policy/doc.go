// Package policy decides which RotationPolicy governs a NodePool (selector
// specificity, docs/design.md#governance) and turns a policy's spec into
// typed settings, finding at reconcile what admission cannot: an unloadable
// time zone, a duration stored before validation existed. A bad policy fails
// alone; it never breaks the resolution of pools governed by other policies.
package policy
