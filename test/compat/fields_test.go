package compat_test

import corev1 "k8s.io/api/core/v1"

// The parts of Karpenter's NodePool and NodeClaim the controller reads or
// writes, as paths into the objects the check writes, each with the code
// that depends on it. Every supported version's CRDs must keep each of
// them: a path its schema prunes, or a write it refuses, is a version the
// controller cannot serve (docs/test-world.md, "CRD compatibility").
// A field the controller adds here must be added to these lists.

// field is one path the controller depends on and the value the check
// writes there, as JSON decodes it.
type field struct {
	path  []string
	value any
	why   string // what reads it, for the failure message
}

var zoneIn = []any{map[string]any{"key": corev1.LabelTopologyZone, "operator": "In", "values": []any{"test-zone-a"}}}

// poolFields: what a pass reads of a NodePool.
var poolFields = []field{
	{[]string{"spec", "template", "spec", "expireAfter"}, "336h", "internal/policy/derive.go, internal/plan/load.go: the expiry cycle"},
	{[]string{"spec", "template", "spec", "terminationGracePeriod"}, "24h0m0s", "internal/policy/derive.go: the drain's grace"},
	{[]string{"spec", "template", "spec", "requirements"}, zoneIn, "internal/surge/placeholder.go: the placeholder's affinity"},
	{[]string{"spec", "template", "spec", "taints"}, []any{map[string]any{"key": "dedicated", "value": "rotation", "effect": "NoSchedule"}},
		"internal/surge/placeholder.go: the placeholder's tolerations"},
	{[]string{"spec", "limits", "cpu"}, "64", "internal/surge/headroom.go: the pool's limits"},
	// required beside the budgets by the CRDs before v1.15, which do not
	// default it; not read by the controller
	{[]string{"spec", "disruption", "consolidateAfter"}, "30s", "Karpenter v1.0–v1.14 require it in spec.disruption"},
	{[]string{"spec", "disruption", "budgets"}, []any{map[string]any{"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": []any{"Underutilized"}}},
		"internal/budget: the pool's disruption budgets (docs/design.md#disruption-budget)"},
}

// claimFields: what a pass reads of a NodeClaim's metadata and spec.
var claimFields = []field{
	{[]string{"metadata", "labels", "karpenter.sh/nodepool"}, "compat", "internal/observe/observe.go: a pool's claims, listed by label"},
	{[]string{"spec", "expireAfter"}, "1h", "internal/census, internal/observe/lost.go: Karpenter's deadline for the claim"},
	{[]string{"spec", "requirements"}, zoneIn, "internal/surge/placeholder.go: the claim's zone"},
}

// claimStatusFields: what a pass reads of a NodeClaim's status, written
// through the status subresource as Karpenter writes it.
var claimStatusFields = []field{
	{[]string{"status", "nodeName"}, "node-compat", "internal/observe: the claim's Node"},
	{[]string{"status", "providerID"}, "kwok://node-compat", "internal/controller/watches.go"},
	{[]string{"status", "allocatable", "cpu"}, "3800m", "internal/observe/subject.go: the placeholder's size clamp"},
}

// claimConditions: the conditions a pass reads (internal/census/take.go
// Ready, internal/surge/unservable.go Launched, internal/budget/count.go
// Initialized, InstanceTerminating and Rebooting).
var claimConditions = []string{"Ready", "Launched", "Initialized", "InstanceTerminating", "Rebooting"}

// poolAnnotations and claimAnnotations: what the controller writes on
// them, through internal/conditional's optimistic-lock merge patch.
var poolAnnotations = map[string]string{
	"noderotation.io/active-rotation":       "compat-claim",
	"noderotation.io/active-rotation-state": "draining",
	"noderotation.io/draining-at":           "2026-12-07T01:00:00Z",
	"noderotation.io/last-rotation-at":      "2026-12-07T00:00:00Z",
}

var claimAnnotations = map[string]string{
	"noderotation.io/state":          "pending",
	"noderotation.io/started-at":     "2026-12-07T00:00:00Z",
	"noderotation.io/surge-claim":    "compat-surge",
	"noderotation.io/retry-count":    "1",
	"noderotation.io/failure-reason": "Timeout",
}
