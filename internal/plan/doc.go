// Package plan builds the report `rotationctl plan` prints: the schedule
// derivation of one RotationPolicy for one NodePool (P, D, gap, t_rot,
// t_rot_est, A, G, C), the next occurrences in local time, and every
// finding with its severity and remedy.
package plan
