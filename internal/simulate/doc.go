// Package simulate runs the controller's own reconciler — observation, the
// proven rules table, the actions and the announcer — against one in-memory
// API server per NodePool (controller-runtime's fake client), a simulated
// Karpenter and a simulated clock, over weeks of policy time in seconds of
// wall time (docs/policy.md#simulating-a-policy). Nothing of the decision is
// re-implemented here: the simulator only plays the cluster's part —
// Karpenter launching, draining and force-expiring nodes — and keeps the
// books the summary and the report are drawn from.
package simulate
