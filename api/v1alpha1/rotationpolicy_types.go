package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// RotationPolicy governs the graceful rotation of the NodePools its
// nodePoolSelector selects. The most specific selector wins a pool; an
// equal-specificity tie is a conflict and that pool is not rotated (see
// docs/design.md#governance).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=rotpol,categories=noderotation
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Matched",type=integer,JSONPath=`.status.matchedNodePools`
// +kubebuilder:printcolumn:name="Rotating",type=integer,JSONPath=`.status.rotatingNodePools`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Feasible",type=string,JSONPath=`.status.conditions[?(@.type=="Feasible")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RotationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   RotationPolicySpec   `json:"spec"`
	Status RotationPolicyStatus `json:"status,omitempty"`
}

// RotationPolicySpec is the configuration an operator authors.
type RotationPolicySpec struct {
	// nodePoolSelector selects the governed NodePools by their labels. Its
	// specificity is the number of matchLabels plus matchExpressions entries;
	// an empty selector selects every NodePool with specificity 0 and loses
	// to any keyed selector. matchExpressions operators are In, NotIn (with
	// values), Exists and DoesNotExist (without).
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions operator must be one of In, NotIn, Exists, DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['In', 'NotIn']) || (has(e.values) && size(e.values) > 0))",message="matchExpressions with In or NotIn need at least one value"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, !(e.operator in ['Exists', 'DoesNotExist']) || !has(e.values) || size(e.values) == 0)",message="matchExpressions with Exists or DoesNotExist take no values"
	// +optional
	NodePoolSelector metav1.LabelSelector `json:"nodePoolSelector,omitempty"`

	// ageThreshold is "auto" (derived: expireAfter − (minRotationChances·P +
	// t_rot), see docs/design.md#age-threshold) or a Go duration that
	// overrides the derivation.
	// +kubebuilder:default=auto
	// +kubebuilder:validation:XValidation:rule="self == 'auto' || self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="ageThreshold must be \"auto\" or a Go duration such as 90m"
	// +kubebuilder:validation:XValidation:rule="self == 'auto' || !self.matches('^([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$') || duration(self) > duration('0s')",message="ageThreshold must be greater than 0"
	// +optional
	AgeThreshold string `json:"ageThreshold,omitempty"`

	// minRotationChances (K) is how many window occurrences each node is
	// guaranteed before its deadline; the floor is 1, 2 or more is advised.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinRotationChances int32 `json:"minRotationChances,omitempty"`

	// maintenanceWindows gate rotation starts; the effective window is the
	// union of the entries (at least one). An in-flight rotation finishes
	// past a window's end. For no restriction, one entry of every day from
	// 00:00 to 24:00.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +required
	MaintenanceWindows []MaintenanceWindow `json:"maintenanceWindows"`

	// blackouts are intervals (holidays, launches) in which no rotation
	// starts, whatever the windows say; a rotation in flight finishes. A
	// window occurrence a blackout overlaps is not counted as missed (see
	// docs/design.md#manual-controls).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Blackouts []Blackout `json:"blackouts,omitempty"`

	// surge configures the make-before-break replacement.
	// +kubebuilder:default={}
	// +optional
	Surge SurgeSpec `json:"surge,omitempty"`

	// prePull pulls the old node's images onto the surge node before the
	// drain (docs/design.md#pre-pull).
	// +optional
	PrePull PrePullSpec `json:"prePull,omitempty"`
}

// Weekday is a day of the week in a maintenance window.
// +kubebuilder:validation:Enum=Mon;Tue;Wed;Thu;Fri;Sat;Sun
type Weekday string

// Blackout is one interval, [start, end), in which no rotation starts.
// +kubebuilder:validation:XValidation:rule="self.end > self.start",message="a blackout's end must be after its start"
type Blackout struct {
	// start is an RFC3339 time, e.g. 2026-12-24T00:00:00Z.
	// +kubebuilder:validation:Format=date-time
	// +required
	Start string `json:"start"`
	// end is an RFC3339 time after start.
	// +kubebuilder:validation:Format=date-time
	// +required
	End string `json:"end"`
	// reason is free text for the people reading the policy.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Reason string `json:"reason,omitempty"`
}

// MaintenanceWindow is one recurring window: on each listed day, from start
// to end in timezone. An entry whose end is not after its start crosses
// midnight into the next day; "24:00" ends at the next midnight.
type MaintenanceWindow struct {
	// timezone is an IANA time zone name, e.g. "Asia/Tokyo" or "UTC". A name
	// the controller cannot load turns the policy's Ready condition to Invalid.
	// +kubebuilder:validation:MinLength=1
	Timezone string `json:"timezone"`

	// days the window opens on (the day its start falls on).
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=7
	Days []Weekday `json:"days"`

	// start is the local opening time, "HH:MM".
	// +kubebuilder:validation:Pattern=`^([01][0-9]|2[0-3]):[0-5][0-9]$`
	Start string `json:"start"`

	// end is the local closing time, "HH:MM" or "24:00".
	// +kubebuilder:validation:Pattern=`^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$`
	End string `json:"end"`
}

// SurgeSpec configures the placeholder surge and its timing.
type SurgeSpec struct {
	// maxUnavailable is how many rotations of one NodePool may be in flight
	// at once: an integer of at least 1, a percentage of the pool's current
	// nodes ("10%", rounded up, at least 1), or "auto", the smallest number
	// that lets the pool's schedule rotate every node before its deadline
	// with minRotationChances chances, up to maxUnavailableCap; the start
	// gate holds the rotations to the NodePool's disruption budget in
	// force. The default is auto; the CRDs before this release defaulted
	// it to 1 (docs/operations.md#upgrading-to-the-auto-default).
	// +kubebuilder:default=auto
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : (self == 'auto' || self.matches('^([1-9][0-9]?|100)%$'))",message="maxUnavailable must be an integer of at least 1, a percentage from 1% to 100% such as 10%, or auto"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// maxUnavailableCap bounds the number maxUnavailable "auto" picks: an
	// integer of at least 1 or a percentage of the pool's current nodes
	// (rounded up, at least 1). Read only with maxUnavailable "auto".
	// +kubebuilder:default="10%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^([1-9][0-9]?|100)%$')",message="maxUnavailableCap must be an integer of at least 1 or a percentage from 1% to 100% such as 10%"
	// +optional
	MaxUnavailableCap *intstr.IntOrString `json:"maxUnavailableCap,omitempty"`

	// nodePoolBudgets says whether the NodePool's own
	// spec.disruption.budgets bound the rotations (docs/design.md#disruption-budget).
	// Honor (the default): a rotation starts only while fewer of the pool's
	// nodes are being disrupted — by Karpenter's drift, consolidation or
	// repair or by a rotation, each once — than both maxUnavailable and the
	// strictest budget in force allow, whatever reasons it lists. Ignore:
	// the budgets bound Karpenter alone, for a pool whose budget of 0 hands
	// node replacement to this controller.
	// +kubebuilder:default=Honor
	// +kubebuilder:validation:Enum=Honor;Ignore
	// +optional
	NodePoolBudgets BudgetMode `json:"nodePoolBudgets,omitempty"`

	// readyTimeout bounds how long the surge may take to become ready before
	// the attempt is rolled back. Must be greater than 0.
	// +kubebuilder:default="15m"
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="readyTimeout must be a Go duration such as 90m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$') || duration(self) > duration('0s')",message="readyTimeout must be greater than 0"
	// +optional
	ReadyTimeout string `json:"readyTimeout,omitempty"`

	// cooldownAfter is gate A: the settle time after a successful rotation
	// before the pool starts the next one. "0" means no cooldown.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="cooldownAfter must be a Go duration such as 90m"
	// +optional
	CooldownAfter string `json:"cooldownAfter,omitempty"`

	// failurePause is gate B: the pool-wide pause after a failed attempt.
	// Unset means max(10m, cooldownAfter); "0" means no pause.
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="failurePause must be a Go duration such as 90m"
	// +optional
	FailurePause string `json:"failurePause,omitempty"`

	// drainEstimate is the expected drain time, used only by the layer-2
	// throughput forecast. Unset means min(terminationGracePeriod, 10m).
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="drainEstimate must be a Go duration such as 90m"
	// +optional
	DrainEstimate string `json:"drainEstimate,omitempty"`

	// provisioningEstimate is the expected time to a ready surge node, used
	// only by the layer-2 forecast. Unset means min(readyTimeout, 5m).
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="provisioningEstimate must be a Go duration such as 90m"
	// +optional
	ProvisioningEstimate string `json:"provisioningEstimate,omitempty"`

	// startCutoff is how far past the close of the current window
	// occurrence a rotation may be forecast to end and still start: a start
	// is held while the time left in the occurrence is less than the
	// forecast (learned from the pool's recent rotations, else
	// provisioningEstimate + drainEstimate) minus startCutoff. Unset means
	// the forecast itself, which holds no start inside an open window; "0"
	// starts only rotations forecast to end by the close. A rotation in
	// flight always finishes (see docs/design.md#window-end).
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="startCutoff must be a Go duration such as 90m"
	// +optional
	StartCutoff string `json:"startCutoff,omitempty"`

	// retryBackoff is the base wait before a failed claim is retried; it
	// doubles per retry up to 8×. Must be greater than 0.
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="retryBackoff must be a Go duration such as 90m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$') || duration(self) > duration('0s')",message="retryBackoff must be greater than 0"
	// +optional
	RetryBackoff string `json:"retryBackoff,omitempty"`

	// matchNodeRequirements lists the node label keys the placeholder
	// replicates from the old node.
	// +kubebuilder:default={}
	// +optional
	MatchNodeRequirements MatchNodeRequirements `json:"matchNodeRequirements,omitempty"`

	// forcefulFallback opts into the surge-less rotation of a claim too close
	// to its deadline for a surge to finish (see
	// docs/design.md#forceful-fallback).
	// +optional
	ForcefulFallback ForcefulFallback `json:"forcefulFallback,omitempty"`

	// wholeNodeReservation sizes the placeholder to the whole clamp limit (a
	// node's allocatable less DaemonSet overhead) instead of the old node's
	// reschedulable Pods.
	// +optional
	WholeNodeReservation bool `json:"wholeNodeReservation,omitempty"`
}

// BudgetMode is whether the NodePool's disruption budgets bound the
// rotations: Honor or Ignore.
type BudgetMode string

// The values of spec.surge.nodePoolBudgets.
const (
	BudgetsHonor  BudgetMode = "Honor"
	BudgetsIgnore BudgetMode = "Ignore"
)

// MatchNodeRequirements lists label keys replicated onto the placeholder.
type MatchNodeRequirements struct {
	// required keys become required node affinity. Dropping the zone from
	// this list is allowed but warned about.
	// +kubebuilder:default={"topology.kubernetes.io/zone","kubernetes.io/arch","karpenter.sh/capacity-type"}
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="required entries must be label keys such as topology.kubernetes.io/zone"
	// +optional
	Required []string `json:"required,omitempty"`

	// preferred keys become preferred node affinity.
	// +listType=set
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="preferred entries must be label keys such as topology.kubernetes.io/zone"
	// +optional
	Preferred []string `json:"preferred,omitempty"`
}

// ForcefulFallback is the opt-in surge-less fallback.
type ForcefulFallback struct {
	// enabled turns the fallback on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
}

// PrePullSpec configures the pre-pull phase: between a ready surge node
// and the old claim's delete, the old node's images are pulled onto the
// surge node so the drained Pods start without waiting on a pull (see
// docs/design.md#pre-pull).
type PrePullSpec struct {
	// enabled turns the phase on.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// timeout bounds the phase: the drain starts when the pre-pull Pod
	// ends or timeout passes, whatever is pulled by then. Must be greater
	// than 0.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="timeout must be a Go duration such as 10m"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^(0|([0-9]+(\\\\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$') || duration(self) > duration('0s')",message="timeout must be greater than 0"
	// +optional
	Timeout string `json:"timeout,omitempty"`

	// maxImages is the most images one rotation pulls; images past it, in
	// the order of the old node's Pods, are skipped and named.
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MaxImages int32 `json:"maxImages,omitempty"`

	// excludeImages are globs (path.Match syntax: "*" stops at "/", e.g.
	// "docker.io/library/busybox:*" or "registry.internal/*/*") an image
	// is skipped by, matched against the reference as the Pods spell it
	// and against its normalized form (docker.io/library/busybox:latest).
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=512
	// +optional
	ExcludeImages []string `json:"excludeImages,omitempty"`

	// usePullSecrets opts into pulling the images of Pods that use
	// imagePullSecrets, by a pre-pull Pod in the source Pod's namespace
	// with that Pod's secrets (docs/design.md#pre-pull). It takes effect
	// only where the controller was installed with the chart's
	// prePull.usePullSecrets, which grants it Pods in every namespace;
	// otherwise, and without it, those images are skipped and named.
	// +optional
	UsePullSecrets bool `json:"usePullSecrets,omitempty"`
}

// RotationPolicyStatus is observational only and never read back for
// rotation decisions.
type RotationPolicyStatus struct {
	// observedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// matchedNodePools counts the pools this policy wins by specificity.
	// +optional
	MatchedNodePools int32 `json:"matchedNodePools"`
	// rotatingNodePools counts, of those, the pools with a rotation in flight.
	// +optional
	RotatingNodePools int32 `json:"rotatingNodePools"`
	// conditions: Ready (Accepted, Invalid, Conflict) and Feasible.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RotationPolicyList is a list of RotationPolicy.
// +kubebuilder:object:root=true
type RotationPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RotationPolicy `json:"items"`
}
