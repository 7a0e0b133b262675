// Package surge sizes and shapes the placeholder Pod that induces the
// replacement capacity inside the pool (docs/design.md#surge): the
// reschedulable sum of the old node's Pods with its four exclusions, the
// clamp to allocatable less DaemonSet overhead, requirement replication,
// tolerations, soft anti-affinity, the negative never-preempting priority;
// the spec.limits headroom check; and surge_ready with its
// provisioned/absorbed path.
package surge
