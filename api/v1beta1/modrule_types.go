package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ModRuleType says what a rule does with the objects it matches.
// +kubebuilder:validation:Enum=Patch;Reject
type ModRuleType string

// Rule types.
const (
	ModRuleTypePatch  ModRuleType = "Patch"
	ModRuleTypeReject ModRuleType = "Reject"
)

// MatchForType says whether any or all selected values must satisfy a criterion.
// +kubebuilder:validation:Enum=Any;All
type MatchForType string

// MatchFor values.
const (
	MatchForTypeAny MatchForType = "Any"
	MatchForTypeAll MatchForType = "All"
)

// PatchOperationType is a JSON patch operation.
// +kubebuilder:validation:Enum=add;replace;remove
type PatchOperationType string

// Patch operations.
const (
	PatchOperationTypeAdd     PatchOperationType = "add"
	PatchOperationTypeReplace PatchOperationType = "replace"
	PatchOperationTypeRemove  PatchOperationType = "remove"
)

// ModRuleAdmissionOperation is an admission operation a rule reacts to.
// +kubebuilder:validation:Enum=CREATE;UPDATE;DELETE
type ModRuleAdmissionOperation string

// Admission operations.
const (
	ModRuleAdmissionOperationCreate ModRuleAdmissionOperation = "CREATE"
	ModRuleAdmissionOperationUpdate ModRuleAdmissionOperation = "UPDATE"
	ModRuleAdmissionOperationDelete ModRuleAdmissionOperation = "DELETE"
)

// Limits of executionTier.
const (
	MinExecutionTier = -32767
	MaxExecutionTier = 32766
)

// MatchItem is one criterion of a rule's match section.
// +kubebuilder:validation:XValidation:rule="(has(self.matchValue) ? 1 : 0) + (has(self.matchValues) && size(self.matchValues) > 0 ? 1 : 0) + (has(self.matchRegex) ? 1 : 0) <= 1",message="use only one of matchValue, matchValues and matchRegex"
type MatchItem struct {
	// Select is a JSONPath expression evaluated against the object.
	// +kubebuilder:validation:MinLength=1
	Select string `json:"select"`

	// MatchFor says whether Any (default) or All of the selected values must match.
	// +optional
	MatchFor *MatchForType `json:"matchFor,omitempty"`

	// MatchValue is compared exactly with the text of each selected value.
	// +optional
	MatchValue *string `json:"matchValue,omitempty"`

	// MatchValues lists accepted texts; a value matches when it equals any of them.
	// +optional
	MatchValues []string `json:"matchValues,omitempty"`

	// MatchRegex is an RE2 regular expression, unanchored, tested against each selected value.
	// +optional
	MatchRegex *string `json:"matchRegex,omitempty"`

	// Negate flips the outcome of the criterion.
	// +optional
	Negate bool `json:"negate,omitempty"`
}

// PatchOperation is one operation of a Patch rule.
type PatchOperation struct {
	// Operation is add, replace or remove.
	Operation PatchOperationType `json:"op"`

	// Select, when set, yields one operation per selected item; #0, #1... in Path
	// are replaced by the keys each wildcard or filter captured.
	// +optional
	Select *string `json:"select,omitempty"`

	// Path is a JSON pointer, with KubeMod's extensions (-1 appends, negative indices).
	// +kubebuilder:validation:MinLength=1
	// +required
	Path string `json:"path"`

	// Value is YAML text, rendered first as a Go template.
	// +optional
	Value *string `json:"value,omitempty"`
}

// ModRuleSpec is what a rule matches and what it does.
// +kubebuilder:validation:XValidation:rule="self.type != 'Patch' || (has(self.patch) && size(self.patch) > 0)",message="a Patch rule needs at least one operation",fieldPath=".patch"
// +kubebuilder:validation:XValidation:rule="self.type != 'Reject' || !has(self.patch) || size(self.patch) == 0",message="only Patch rules have patch operations",fieldPath=".patch"
// +kubebuilder:validation:XValidation:rule="self.type != 'Patch' || !has(self.rejectMessage)",message="only Reject rules have a rejectMessage",fieldPath=".rejectMessage"
type ModRuleSpec struct {
	// Type is Patch or Reject.
	// +required
	Type ModRuleType `json:"type"`

	// ExecutionTier orders rules: lower tiers run first. Default 0.
	// +kubebuilder:validation:Minimum=-32767
	// +kubebuilder:validation:Maximum=32766
	// +kubebuilder:default=0
	// +optional
	ExecutionTier int `json:"executionTier,omitempty"`

	// AdmissionOperations the rule reacts to; default CREATE and UPDATE.
	// +optional
	// +listType=set
	AdmissionOperations []ModRuleAdmissionOperation `json:"admissionOperations,omitempty"`

	// Match lists the criteria; all must hold.
	// +kubebuilder:validation:MinItems=1
	Match []MatchItem `json:"match"`

	// Patch lists the operations of a Patch rule.
	// +optional
	Patch []PatchOperation `json:"patch,omitempty"`

	// RejectMessage is a Go template rendered into the denial of a Reject rule.
	// +optional
	RejectMessage *string `json:"rejectMessage,omitempty"`

	// TargetNamespaceRegex, for rules in the cluster-rules namespace, selects the
	// namespaces whose objects the rule applies to (RE2, unanchored).
	// +optional
	TargetNamespaceRegex *string `json:"targetNamespaceRegex,omitempty"`
}

// ModRuleStatus is written by the operator.
type ModRuleStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready is True when the rule compiled, or False with reason
	// CompileError and a message naming the field and position.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// TotalViolations counts the rule's fail results on the objects of the
	// cluster at its last background scan (docs/audit.md); absent without
	// the scan.
	// +optional
	TotalViolations *int64 `json:"totalViolations,omitempty"`
	// AuditTimestamp is when that scan ended.
	// +optional
	AuditTimestamp *metav1.Time `json:"auditTimestamp,omitempty"`
}

// ModRule patches or rejects the objects it matches.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=kubemod;modwright,shortName=mr
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="Tier",type=integer,JSONPath=`.spec.executionTier`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ModRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ModRuleSpec   `json:"spec,omitempty"`
	Status ModRuleStatus `json:"status,omitempty"`
}

// ModRuleList is a list of ModRules.
// +kubebuilder:object:root=true
type ModRuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ModRule `json:"items"`
}

// NamespacedName is "namespace/name", or just "name" when the rule has no namespace.
func (r *ModRule) NamespacedName() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}
