// Package controller holds the reconcilers. The NodePool reconciler
// composes one pass, and the arrows point one way: observe
// (internal/observe) → decide (engine, with the table of internal/table) →
// act (actions, on the targets the pass hands them) → announce
// (internal/announce: what a step earned as soon as it has run, the rest
// of the pass in one Report after act, with a View cut from the
// observation). One
// non-blocking step per pass, requeued at the next instant that matters
// and at least every minute (docs/design.md#state-model).
package controller
