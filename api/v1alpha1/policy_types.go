package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FailurePolicy says what an evaluation error does: Fail denies the
// request, Ignore skips the policy. Either way the error is reported.
// +kubebuilder:validation:Enum=Fail;Ignore
type FailurePolicy string

// Failure policies.
const (
	Fail   FailurePolicy = "Fail"
	Ignore FailurePolicy = "Ignore"
)

// ValidationAction is what a failed validation does, as a
// ValidatingAdmissionPolicyBinding's validationActions: Deny rejects the
// request, Warn adds an admission warning, Audit an audit annotation.
// +kubebuilder:validation:Enum=Deny;Warn;Audit
type ValidationAction string

// Validation actions.
const (
	Deny  ValidationAction = "Deny"
	Warn  ValidationAction = "Warn"
	Audit ValidationAction = "Audit"
)

// Operation is an admission operation.
// +kubebuilder:validation:Enum=CREATE;UPDATE;DELETE;CONNECT
type Operation string

// Expression is one expression slot: a union with one member per language;
// exactly one is set (each type holding an Expression checks it, with its
// own members).
type Expression struct {
	// CEL is a Common Expression Language expression, type-checked when the
	// policy loads, evaluated as the kube-apiserver's admission policies
	// evaluate theirs (variables object, oldObject, request,
	// namespaceObject, variables).
	// +kubebuilder:validation:MinLength=1
	// +optional
	CEL string `json:"cel,omitempty"`

	// JMESPath is a JMESPath query with Kyverno's functions, evaluated
	// over Kyverno's context: request (with object, oldObject, userInfo,
	// roles, clusterRoles), serviceAccountName, serviceAccountNamespace,
	// images, and every variable and context entry by name.
	// +kubebuilder:validation:MinLength=1
	// +optional
	JMESPath string `json:"jmespath,omitempty"`

	// Rego is a Rego module (v1) and its entrypoint, compiled once when
	// the policy loads, evaluated over input.object, input.oldObject,
	// input.request and input.context (the context entries and variables
	// the module names), with no external data and a 100 ms budget. A
	// condition's entrypoint is a boolean (undefined: false), a
	// validation's a boolean or a set of violation messages (any fails
	// the validation with them), a variable's any value (undefined: null).
	// +optional
	Rego *RegoExpression `json:"rego,omitempty"`
}

// ConditionOperator is a Kyverno condition operator.
// +kubebuilder:validation:Enum=Equals;NotEquals;In;AnyIn;AllIn;NotIn;AnyNotIn;AllNotIn;GreaterThanOrEquals;GreaterThan;LessThanOrEquals;LessThan;DurationGreaterThanOrEquals;DurationGreaterThan;DurationLessThanOrEquals;DurationLessThan
type ConditionOperator string

// Condition compares a key with a value, as a Kyverno condition: both may
// hold {{ }} variables, substituted first.
type Condition struct {
	// Key is the value compared: any JSON value, usually a "{{ }}"
	// variable.
	// +kubebuilder:validation:XPreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Key *apiextensionsv1.JSON `json:"key"`
	// Operator compares key and value, with Kyverno's semantics
	// (wildcards in string values, quantities, durations, ranges).
	Operator ConditionOperator `json:"operator"`
	// Value is what the key is compared with.
	// +kubebuilder:validation:XPreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
	// Message explains the condition when it fails (it may hold variables).
	// +optional
	Message string `json:"message,omitempty"`
}

// Conditions is a Kyverno condition block: every condition of All and at
// least one of Any (when it has any) must hold.
// +kubebuilder:validation:XValidation:rule="(has(self.all) && size(self.all) > 0) || (has(self.any) && size(self.any) > 0)",message="conditions need at least one condition in all or any"
type Conditions struct {
	// All must all hold (at most 64).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	All []Condition `json:"all,omitempty"`
	// Any: at least one must hold (at most 64).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Any []Condition `json:"any,omitempty"`
}

// DenyConditions denies the object when its conditions hold, as a Kyverno
// validate.deny.
type DenyConditions struct {
	Conditions Conditions `json:"conditions"`
}

// Variable is a named expression; variables are evaluated lazily, at most
// once per request, and later ones may read earlier ones as
// variables.<name> (and JMESPath by name).
// +kubebuilder:validation:XValidation:rule="(has(self.cel) ? 1 : 0) + (has(self.jmespath) ? 1 : 0) + (has(self.rego) ? 1 : 0) == 1",message="exactly one language must be set: cel, jmespath or rego"
// +kubebuilder:validation:XValidation:rule="!(self.name in ['true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import', 'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while'])",message="name must be a CEL identifier, not a reserved word",fieldPath=".name"
type Variable struct {
	// Name is the variable's name: a CEL identifier (not a reserved word).
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +kubebuilder:validation:MaxLength=63
	Name       string `json:"name"`
	Expression `json:",inline"`
}

// MatchCondition is a condition on the request; the policy applies only
// when every condition is true, as an admission policy's matchConditions.
// A condition is an expression (true or false) or a block of Kyverno
// conditions (the policy applies when they hold, as Kyverno's
// preconditions).
// +kubebuilder:validation:XValidation:rule="(has(self.cel) ? 1 : 0) + (has(self.jmespath) ? 1 : 0) + (has(self.rego) ? 1 : 0) + (has(self.conditions) ? 1 : 0) == 1",message="exactly one of cel, jmespath, rego and conditions must be set"
type MatchCondition struct {
	// Name identifies the condition in messages and explanations: a
	// qualified name, as an admission policy's (an optional DNS subdomain
	// prefix and "/", then at most 63 characters).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="!format.qualifiedName().validate(self).hasValue()",message="name must be a qualified name: an optional DNS subdomain prefix and '/', then at most 63 alphanumerics, '-', '_' or '.', beginning and ending with an alphanumeric"
	Name       string `json:"name"`
	Expression `json:",inline"`
	// Conditions: Kyverno conditions, all of which must hold.
	// +optional
	Conditions *Conditions `json:"conditions,omitempty"`
}

// Validation is a condition the object must satisfy: an expression (false
// fails the validation) or a Kyverno deny block (the validation fails when
// its conditions hold).
// +kubebuilder:validation:XValidation:rule="(has(self.cel) ? 1 : 0) + (has(self.jmespath) ? 1 : 0) + (has(self.deny) ? 1 : 0) + (has(self.cue) ? 1 : 0) + (has(self.rego) ? 1 : 0) == 1",message="exactly one of cel, jmespath, rego, deny and cue must be set"
type Validation struct {
	// The condition; false fails the validation.
	Expression `json:",inline"`

	// Deny fails the validation when its conditions hold.
	// +optional
	Deny *DenyConditions `json:"deny,omitempty"`

	// CUE is a CUE program producing `validate: {valid: bool, reason:
	// string}` (valid when absent), as kinitiras' validate rules: it reads
	// `object`, `oldObject` (UPDATE) and `data` (object, oldObject,
	// request, and the context entries and variables it names); a false
	// valid fails the validation with reason as the message (else
	// message).
	// +kubebuilder:validation:MinLength=1
	// +optional
	CUE string `json:"cue,omitempty"`

	// Scope is a KubeMod JSONPath expression ($.spec.containers[*]): the
	// condition is evaluated for each value it selects, bound to `self`
	// (and `oldSelf`, the value at the same place in oldObject, when there
	// is one). Absent: the object.
	// +kubebuilder:validation:XValidation:rule="self.startsWith('$')",message="scope must be a KubeMod JSONPath expression starting with $"
	// +optional
	Scope string `json:"scope,omitempty"`

	// Message is the denial or warning text; default: the expression that
	// failed. As an admission policy's, it must not be blank nor contain
	// line breaks (it may become a Warning header), apart from leading and
	// trailing ones, which are trimmed.
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="message must not be blank"
	// +kubebuilder:validation:XValidation:rule="!self.trim().contains('\\n') && !self.trim().contains('\\r')",message="message must not contain line breaks"
	// +optional
	Message string `json:"message,omitempty"`

	// MessageExpression is a CEL expression producing the message; it wins
	// over Message when it evaluates to a non-empty string. It is CEL
	// whatever the language of the condition.
	// +kubebuilder:validation:MinLength=1
	// +optional
	MessageExpression string `json:"messageExpression,omitempty"`

	// Reason is the status reason of a denial (and its HTTP code), as an
	// admission policy's: Invalid (422, the default), Forbidden (403),
	// Unauthorized (401) or RequestEntityTooLarge (413).
	// +kubebuilder:validation:Enum=Unauthorized;Forbidden;Invalid;RequestEntityTooLarge
	// +optional
	Reason *metav1.StatusReason `json:"reason,omitempty"`
}

// Mutation changes the object: a union with one member per way of saying
// the change; exactly one is set.
// +kubebuilder:validation:XValidation:rule="(has(self.jsonPatch) ? 1 : 0) + (has(self.applyConfiguration) ? 1 : 0) + (has(self.patch) ? 1 : 0) + (has(self.cue) ? 1 : 0) == 1",message="exactly one of jsonPatch, applyConfiguration, patch and cue must be set"
type Mutation struct {
	// JSONPatch is a CEL expression evaluating to a list of JSONPatch
	// operations, applied as a MutatingAdmissionPolicy applies them.
	// +kubebuilder:validation:MinLength=1
	// +optional
	JSONPatch string `json:"jsonPatch,omitempty"`

	// ApplyConfiguration is a CEL expression evaluating to an Object{...}
	// merged into the object with server-side-apply semantics, as a
	// MutatingAdmissionPolicy merges it.
	// +kubebuilder:validation:MinLength=1
	// +optional
	ApplyConfiguration string `json:"applyConfiguration,omitempty"`

	// Patch is a static RFC 6902 JSON Patch whose values may hold {{ }}
	// variables (not its paths), as Kyverno's patchesJson6902.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Patch []PatchOperation `json:"patch,omitempty"`

	// CUE is a CUE program producing `patches`, a list of JSON-patch
	// operations, as kinitiras' cue overriders: it reads `object`,
	// `oldObject` (UPDATE) and `data` as a validation's.
	// +kubebuilder:validation:MinLength=1
	// +optional
	CUE string `json:"cue,omitempty"`
}

// PatchOperation is one RFC 6902 operation (add, replace and test need a
// value: checked when the policy loads, as a schemaless value is invisible
// to the CRD's rules).
// +kubebuilder:validation:XValidation:rule="self.op in ['move', 'copy'] ? has(self.from) : !has(self.from)",message="from is for move and copy only, and they need it"
type PatchOperation struct {
	// +kubebuilder:validation:Enum=add;remove;replace;move;copy;test
	Op string `json:"op"`
	// Path is a JSON pointer (no variables).
	Path string `json:"path"`
	// From is the source pointer of move and copy.
	// +optional
	From string `json:"from,omitempty"`
	// Value of add, replace and test: any JSON, its strings may hold {{ }}
	// variables.
	// +kubebuilder:validation:XPreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
}

// ContextEntry is a named value read for the policy's expressions, as a
// Kyverno context entry: exactly one source is set. Its fields may hold
// {{ }} variables (earlier entries among them).
// +kubebuilder:validation:XValidation:rule="(has(self.configMap) ? 1 : 0) + (has(self.apiCall) ? 1 : 0) + (has(self.variable) ? 1 : 0) + (has(self.graph) ? 1 : 0) == 1",message="exactly one of configMap, apiCall, variable and graph must be set"
type ContextEntry struct {
	// Name is the entry's name: a JMESPath and CEL identifier.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// ConfigMap reads a ConfigMap (its data under data).
	// +optional
	ConfigMap *ConfigMapReference `json:"configMap,omitempty"`
	// APICall reads the API server.
	// +optional
	APICall *APICall `json:"apiCall,omitempty"`
	// Variable computes a value.
	// +optional
	Variable *ContextVariable `json:"variable,omitempty"`
	// Graph reads the object's edges in the relationship graph
	// (docs/graph.md): a list of {type, from: {kind, namespace, name},
	// to: {...}}.
	// +optional
	Graph *GraphContext `json:"graph,omitempty"`
}

// RegoExpression is a Rego module (v1) and the rule it queries.
type RegoExpression struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	Module string `json:"module"`
	// Entrypoint is the rule queried: data.<package>.<rule>.
	// +kubebuilder:validation:MinLength=1
	Entrypoint string `json:"entrypoint"`
}

// GraphContext selects the object's edges: those into it (incoming), out
// of it (outgoing) or both, of the given types (none: every type).
type GraphContext struct {
	// +kubebuilder:validation:Enum=incoming;outgoing;both
	// +optional
	Direction string `json:"direction,omitempty"`
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Types []string `json:"types,omitempty"`
}

// ConfigMapReference names a ConfigMap.
type ConfigMapReference struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace: default, the policy's (a ClusterPolicy's: the object's).
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// APICall reads a URL path of the API server with the operator's service
// account (see docs/variables.md for the RBAC it needs).
type APICall struct {
	// URLPath is the path (/api/v1/namespaces/{{ request.namespace }}/pods).
	// +kubebuilder:validation:MinLength=1
	URLPath string `json:"urlPath"`
	// Method: GET (default) or POST.
	// +kubebuilder:validation:Enum=GET;POST
	// +optional
	Method string `json:"method,omitempty"`
	// Data is the POST body: an object of these keys and values.
	// +optional
	Data []RequestData `json:"data,omitempty"`
	// JMESPath transforms the response.
	// +optional
	JMESPath string `json:"jmesPath,omitempty"`
	// Default is the value when the call fails or the result is null.
	// +kubebuilder:validation:XPreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Default *apiextensionsv1.JSON `json:"default,omitempty"`
}

// RequestData is one key of an API call's POST body.
type RequestData struct {
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
	// +kubebuilder:validation:XPreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	Value *apiextensionsv1.JSON `json:"value"`
}

// ContextVariable is a computed value, as Kyverno's: JMESPath transforms
// Value when it is given, else queries the whole context; Default when
// the result is null or missing. It needs a value or a jmesPath (checked
// when the policy loads).
type ContextVariable struct {
	// +kubebuilder:validation:XPreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Value *apiextensionsv1.JSON `json:"value,omitempty"`
	// +optional
	JMESPath string `json:"jmesPath,omitempty"`
	// +kubebuilder:validation:XPreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +optional
	Default *apiextensionsv1.JSON `json:"default,omitempty"`
}

// AuditAnnotation adds an audit annotation to the request.
type AuditAnnotation struct {
	// Key of the annotation, prefixed with the policy's name and "/" as an
	// admission policy's: the name part of a qualified name (at most 63
	// alphanumerics, '-', '_' or '.', beginning and ending with an
	// alphanumeric).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$')",message="key must be the name part of a qualified name: alphanumerics, '-', '_' or '.', beginning and ending with an alphanumeric"
	Key string `json:"key"`
	// ValueExpression is a CEL expression producing the value: a string,
	// or null to add nothing. At most 5 KiB, as an admission policy's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=5120
	ValueExpression string `json:"valueExpression"`
}

// ResourceFilter selects objects by type and name; an empty list matches
// anything.
type ResourceFilter struct {
	// APIGroups: "" is the core group, "*" any.
	// +optional
	APIGroups []string `json:"apiGroups,omitempty"`
	// Kinds: "*" any.
	// +kubebuilder:validation:items:MinLength=1
	// +optional
	Kinds []string `json:"kinds,omitempty"`
	// Names: glob patterns (* and ?) on metadata.name.
	// +kubebuilder:validation:items:MinLength=1
	// +optional
	Names []string `json:"names,omitempty"`
	// Namespaces: glob patterns on the object's namespace (ClusterPolicy
	// only: a Policy applies to objects of its own namespace).
	// +kubebuilder:validation:items:MinLength=1
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
}

// ExcludeResources names objects a policy does not apply to, even when its
// match does: any resource filter, or both selectors when set.
type ExcludeResources struct {
	// Resources: an object any filter selects is excluded (at most 64).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Resources []ResourceFilter `json:"resources,omitempty"`
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// +optional
	ObjectSelector *metav1.LabelSelector `json:"objectSelector,omitempty"`
}

// MatchResources is the static part of a policy's match: indexed, no
// expressions.
type MatchResources struct {
	// Operations the policy reacts to; default (absent) CREATE and UPDATE.
	// +kubebuilder:validation:MinItems=1
	// +optional
	// +listType=set
	Operations []Operation `json:"operations,omitempty"`
	// Resources: the policy applies to an object any filter selects;
	// empty: every kind. At most 64.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Resources []ResourceFilter `json:"resources,omitempty"`
	// NamespaceSelector selects on the labels of the object's namespace
	// (a cluster-scoped object has none: only an empty selector matches).
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// ObjectSelector selects on the object's labels (the old object's on
	// DELETE).
	// +optional
	ObjectSelector *metav1.LabelSelector `json:"objectSelector,omitempty"`
	// Exclude removes objects from the match.
	// +optional
	Exclude *ExcludeResources `json:"exclude,omitempty"`
}

// PolicySpec is what a policy matches, checks and changes. A policy that
// neither validates, mutates nor annotates does nothing: it is refused, as
// an admission policy without validations and audit annotations (or
// without mutations) is.
// +kubebuilder:validation:XValidation:rule="(has(self.validations) && size(self.validations) > 0) || (has(self.mutations) && size(self.mutations) > 0) || (has(self.auditAnnotations) && size(self.auditAnnotations) > 0)",message="a policy needs at least one of validations, mutations and auditAnnotations"
type PolicySpec struct {
	// ExecutionTier orders rules of every kind: lower tiers run first.
	// +kubebuilder:validation:Minimum=-32767
	// +kubebuilder:validation:Maximum=32766
	// +kubebuilder:default=0
	// +optional
	ExecutionTier int `json:"executionTier,omitempty"`

	// FailurePolicy: what an evaluation error does (always reported).
	// +kubebuilder:default=Fail
	// +optional
	FailurePolicy FailurePolicy `json:"failurePolicy,omitempty"`

	// ValidationActions: what a failed validation does; default (absent)
	// Deny. As a ValidatingAdmissionPolicyBinding's: not both Deny and Warn.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:XValidation:rule="!('Deny' in self && 'Warn' in self)",message="must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"
	// +optional
	// +listType=set
	ValidationActions []ValidationAction `json:"validationActions,omitempty"`

	// Match selects the objects the policy applies to.
	// +optional
	Match *MatchResources `json:"match,omitempty"`

	// Context entries read data (ConfigMaps, API reads, computed values)
	// for the expressions, in order, lazily, once the static match holds
	// (at most 64).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	// +listType=map
	// +listMapKey=name
	Context []ContextEntry `json:"context,omitempty"`

	// Variables are named expressions the others read as
	// variables.<name> (at most 256).
	// +kubebuilder:validation:MaxItems=256
	// +optional
	// +listType=map
	// +listMapKey=name
	Variables []Variable `json:"variables,omitempty"`

	// MatchConditions must all be true for the policy to apply (at most
	// 64, as an admission policy's).
	// +kubebuilder:validation:MaxItems=64
	// +optional
	// +listType=map
	// +listMapKey=name
	MatchConditions []MatchCondition `json:"matchConditions,omitempty"`

	// Validations the object must pass (at most 256).
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Validations []Validation `json:"validations,omitempty"`

	// Mutations change the object, in order, each atomically (at most
	// 256).
	// +kubebuilder:validation:MaxItems=256
	// +optional
	Mutations []Mutation `json:"mutations,omitempty"`

	// AuditAnnotations add audit annotations to admitted requests (at
	// most 20, as an admission policy's).
	// +kubebuilder:validation:MaxItems=20
	// +optional
	// +listType=map
	// +listMapKey=key
	AuditAnnotations []AuditAnnotation `json:"auditAnnotations,omitempty"`
}

// PolicyStatus is written by the operator.
type PolicyStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready is True when the policy compiled, or False with
	// reason CompileError and a message naming the field and position.
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

// ModwrightPolicy checks and changes objects of its own namespace.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=modwright,shortName=mwpol
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Tier",type=integer,JSONPath=`.spec.executionTier`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ModwrightPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec: a ModwrightPolicy's resource filters have no namespaces (its
	// own namespace is its scope).
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="!has(self.match) || !has(self.match.resources) || self.match.resources.all(r, !has(r.namespaces) || size(r.namespaces) == 0)",message="namespaces is for ClusterModwrightPolicies: a ModwrightPolicy applies to objects of its own namespace",fieldPath=".match.resources"
	// +kubebuilder:validation:XValidation:rule="!has(self.match) || !has(self.match.exclude) || !has(self.match.exclude.resources) || self.match.exclude.resources.all(r, !has(r.namespaces) || size(r.namespaces) == 0)",message="namespaces is for ClusterModwrightPolicies: a ModwrightPolicy applies to objects of its own namespace",fieldPath=".match.exclude.resources"
	Spec   PolicySpec   `json:"spec"`
	Status PolicyStatus `json:"status,omitempty"`
}

// ModwrightPolicyList is a list of ModwrightPolicies.
// +kubebuilder:object:root=true
type ModwrightPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ModwrightPolicy `json:"items"`
}

// ClusterModwrightPolicy checks and changes objects cluster-wide:
// cluster-scoped objects and those of every namespace its match allows.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=modwright,shortName=mwcpol
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Tier",type=integer,JSONPath=`.spec.executionTier`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterModwrightPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:Required
	Spec   PolicySpec   `json:"spec"`
	Status PolicyStatus `json:"status,omitempty"`
}

// ClusterModwrightPolicyList is a list of ClusterModwrightPolicies.
// +kubebuilder:object:root=true
type ClusterModwrightPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterModwrightPolicy `json:"items"`
}

// Policy is ModwrightPolicy's former name, read for one release: its kind
// and plural are Kyverno's too (docs/policy.md).
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,categories=modwright
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="modwright.io/v1alpha1 Policy is deprecated: write kind ModwrightPolicy (same spec); the old name is read for one more release"
// +kubebuilder:printcolumn:name="Tier",type=integer,JSONPath=`.spec.executionTier`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Policy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec: as a ModwrightPolicy's.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="!has(self.match) || !has(self.match.resources) || self.match.resources.all(r, !has(r.namespaces) || size(r.namespaces) == 0)",message="namespaces is for ClusterModwrightPolicies: a ModwrightPolicy applies to objects of its own namespace",fieldPath=".match.resources"
	// +kubebuilder:validation:XValidation:rule="!has(self.match) || !has(self.match.exclude) || !has(self.match.exclude.resources) || self.match.exclude.resources.all(r, !has(r.namespaces) || size(r.namespaces) == 0)",message="namespaces is for ClusterModwrightPolicies: a ModwrightPolicy applies to objects of its own namespace",fieldPath=".match.exclude.resources"
	Spec   PolicySpec   `json:"spec"`
	Status PolicyStatus `json:"status,omitempty"`
}

// PolicyList is a list of Policies.
// +kubebuilder:object:root=true
type PolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Policy `json:"items"`
}

// ClusterPolicy is ClusterModwrightPolicy's former name, read for one
// release.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=modwright
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="modwright.io/v1alpha1 ClusterPolicy is deprecated: write kind ClusterModwrightPolicy (same spec); the old name is read for one more release"
// +kubebuilder:printcolumn:name="Tier",type=integer,JSONPath=`.spec.executionTier`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +kubebuilder:validation:Required
	Spec   PolicySpec   `json:"spec"`
	Status PolicyStatus `json:"status,omitempty"`
}

// ClusterPolicyList is a list of ClusterPolicies.
// +kubebuilder:object:root=true
type ClusterPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPolicy `json:"items"`
}
