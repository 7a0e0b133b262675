// Package controller holds the reconcilers. The NodePool reconciler is thin:
// observe (internal/observe) → snapshot → engine decision (engine, rules) →
// actions (actions), one non-blocking step per pass, requeued at the next
// instant that matters and at least every minute.
package controller
