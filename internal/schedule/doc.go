// Package schedule is the pure mathematics of maintenance windows and the
// derived age threshold (docs/design.md#maintenance-windows,
// docs/design.md#age-threshold): the union of windows over time
// zones on the real calendar, the period P, duration D and gap, the derived
// figures t_rot, t_rot_est, A, G and C, the escalated retry backoff with its
// window-aware clamp, and the layer-1/2/3 findings. It has no Kubernetes
// client; every function that needs the time takes it as an argument.
package schedule
