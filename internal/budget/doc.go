// Package budget reads a NodePool's spec.disruption.budgets the way
// Karpenter reads them, and counts the pool's disruption whoever started
// it (docs/design.md#disruption-budget): one budget per pool, shared by
// Karpenter's drift, consolidation and repair and by this controller's
// rotations.
//
// The allowance in force is Karpenter's own code (the v1 API types'
// Budget.GetAllowedDisruptions); this package adds what Karpenter does not
// export: the strictest budget over every reason, the budget that sets it,
// and when it stops being in force.
package budget
