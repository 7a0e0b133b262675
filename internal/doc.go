// Package internal groups the controller's domain packages that are not part
// of its public surface: schedule math, policy resolution, surge sizing,
// observation, metrics and the reconcilers. Data flows observe → snapshot →
// engine decision → actions.
package internal
