package v1alpha1

import (
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// OverridePolicySpec is an override policy: which objects (any selector
// selects; none: every object) and the rules that patch them.
type OverridePolicySpec struct {
	// +optional
	ResourceSelectors []ResourceSelector  `json:"resourceSelectors,omitempty"`
	OverrideRules     []RuleWithOperation `json:"overrideRules"`
}

// RuleWithOperation is an override rule: the operations it applies to
// (none or "*": all) and its overriders.
type RuleWithOperation struct {
	// +optional
	TargetOperations []admissionv1.Operation `json:"targetOperations,omitempty"`
	Overriders       Overriders              `json:"overriders"`
}

// ResourceSelector selects objects: apiVersion and kind, then a name, or
// label and field selectors; namespace when set.
type ResourceSelector struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// +optional
	FieldSelector *FieldSelector `json:"fieldSelector,omitempty"`
}

// FieldSelector selects on fields by dotted path (metadata.annotations.a.b/c
// reads the annotation a.b/c): every matchFields entry and every
// requirement must hold.
type FieldSelector struct {
	// +optional
	MatchFields map[string]string `json:"matchFields,omitempty"`
	// +optional
	MatchExpressions []*FieldSelectorRequirement `json:"matchExpressions,omitempty"`
}

// FieldSelectorRequirement is one requirement on a field.
type FieldSelectorRequirement struct {
	Field string `json:"field"`
	// In, NotIn, Exists or DoesNotExist (another operator does not match).
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// +optional
	Value []string `json:"value,omitempty"`
}

// Overriders patch the object, in this order: renderedCue (the template
// rendered), cue, origin, plaintext.
type Overriders struct {
	// +optional
	Plaintext []PlaintextOverrider `json:"plaintext,omitempty"`
	// Cue is a CUE program reading object and giving patches.
	// +optional
	Cue string `json:"cue,omitempty"`
	// +optional
	Template *OverrideRuleTemplate `json:"template,omitempty"`
	// RenderedCue is the template rendered to CUE by the policy webhook.
	// +optional
	RenderedCue string `json:"renderedCue,omitempty"`
	// +optional
	Origin []OverrideRuleOrigin `json:"origin,omitempty"`
}

// OverrideRuleType is a template's type.
// +kubebuilder:validation:Enum=annotations;labels;resourcesOversell;resources;affinity;tolerations
type OverrideRuleType string

// OverriderOperator is a patch operation.
// +kubebuilder:validation:Enum=add;remove;replace
type OverriderOperator string

// ValueRefFrom is where a referenced value comes from.
// +kubebuilder:validation:Enum=current;old;k8s;owner;http
type ValueRefFrom string

// OverrideRuleTemplate is a structured override, rendered to CUE.
type OverrideRuleTemplate struct {
	// +optional
	Type OverrideRuleType `json:"type,omitempty"`
	// +optional
	Operation OverriderOperator `json:"operation,omitempty"`
	// Path is the annotation's or label's key.
	// +optional
	Path string `json:"path,omitempty"`
	// +optional
	Value *ConstantValue `json:"value,omitempty"`
	// +optional
	ValueRef *ResourceRefer `json:"valueRef,omitempty"`
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	ResourcesOversell *ResourcesOversellRule `json:"resourcesOversell,omitempty"`
	// +optional
	Tolerations []*corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
}

// ResourceRefer names a value elsewhere: in the object (current), the old
// object (old), another object (k8s), the owner (owner) or an HTTP
// response (http), at path.
type ResourceRefer struct {
	// +optional
	From ValueRefFrom `json:"from,omitempty"`
	// +optional
	Path string `json:"path,omitempty"`
	// +optional
	K8s *ResourceSelector `json:"k8s,omitempty"`
	// +optional
	Http *HttpDataRef `json:"http,omitempty"` //nolint:revive // kinitiras' name
}

// HttpDataRef is an HTTP request; {{ path }} in url and params reads the
// object.
type HttpDataRef struct { //nolint:revive // kinitiras' name
	URL string `json:"url,omitempty"`
	// +optional
	Method string `json:"method,omitempty"`
	// +optional
	Header map[string]string `json:"header,omitempty"`
	// +optional
	Params map[string]string `json:"params,omitempty"`
	// +optional
	Body apiextensionsv1.JSON `json:"body,omitempty"`
	// +optional
	Auth *HttpRequestAuth `json:"auth,omitempty"`
}

// HttpRequestAuth is a bearer token: static, or fetched from authUrl with
// the username and password.
type HttpRequestAuth struct { //nolint:revive // kinitiras' name
	// +optional
	StaticToken string `json:"staticToken,omitempty"`
	// +optional
	Username string `json:"username,omitempty"`
	// +optional
	Password string `json:"password,omitempty"`
	// +optional
	AuthURL string `json:"authUrl,omitempty"`
	// +optional
	ExpireDuration metav1.Duration `json:"expireDuration,omitempty"`
	// +optional
	Token string `json:"token,omitempty"`
	// +optional
	ExpireAt metav1.Time `json:"expireAt,omitempty"`
}

// ResourcesOversellRule holds the factors (0 < f < 1) requests are set to
// of the limits.
type ResourcesOversellRule struct {
	// +optional
	CpuFactor Float64 `json:"cpuFactor,omitempty"` //nolint:revive // kinitiras' name
	// +optional
	MemoryFactor Float64 `json:"memoryFactor,omitempty"`
	// +optional
	DiskFactor Float64 `json:"diskFactor,omitempty"`
}

// Float64 is a decimal written as a string.
type Float64 string

// ConstantValue is a constant; the first member set is the value.
type ConstantValue struct {
	// +optional
	String *string `json:"string,omitempty"`
	// +optional
	Integer *int64 `json:"integer,omitempty"`
	// +optional
	Float *Float64 `json:"float,omitempty"`
	// +optional
	Boolean *bool `json:"boolean,omitempty"`
	// +optional
	StringSlice []string `json:"stringSlice,omitempty"`
	// +optional
	IntegerSlice []int64 `json:"integerSlice,omitempty"`
	// +optional
	FloatSlice []Float64 `json:"floatSlice,omitempty"`
	// +optional
	StringMap map[string]string `json:"stringMap,omitempty"`
}

// PlaintextOverrider is one JSON-patch operation.
type PlaintextOverrider struct {
	Path     string            `json:"path"`
	Operator OverriderOperator `json:"op"`
	// +optional
	Value apiextensionsv1.JSON `json:"value,omitempty"`
}

// OverrideRuleOriginType is an origin overrider's type.
// +kubebuilder:validation:Enum=annotations;labels;nodeSelector;hostNetwork;schedulerName;resourceRequirements;resourceOversell;affinity;tolerations;topologySpreadConstraints
type OverrideRuleOriginType string

// OverrideRuleOrigin is a structured override applied without CUE.
type OverrideRuleOrigin struct {
	// +optional
	Type OverrideRuleOriginType `json:"type,omitempty"`
	// +optional
	Operation OverriderOperator `json:"operation,omitempty"`
	// +optional
	Replace bool `json:"replace,omitempty"`
	// +optional
	ResourceOversell map[string]map[string]Float64 `json:"resourcesOversell,omitempty"`
	// +optional
	ContainerCount int `json:"containerCount,omitempty"`
	// +optional
	ResourceRequirements corev1.ResourceRequirements `json:"resourceRequirements,omitempty"`
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// ClusterValidatePolicySpec is a validate policy: which objects and the
// rules that may refuse them.
type ClusterValidatePolicySpec struct {
	// +optional
	ResourceSelectors []ResourceSelector          `json:"resourceSelectors,omitempty"`
	ValidateRules     []ValidateRuleWithOperation `json:"validateRules"`
}

// ValidateRuleWithOperation is a validate rule: a CUE program giving
// validate {valid, reason}, or a template.
type ValidateRuleWithOperation struct {
	// +optional
	TargetOperations []admissionv1.Operation `json:"targetOperations,omitempty"`
	// +optional
	Cue string `json:"cue"`
	// +optional
	Template *ValidateRuleTemplate `json:"template,omitempty"`
	// +optional
	RenderedCue string `json:"renderedCue,omitempty"`
}

// ValidateRuleTemplate is a structured validation (type condition).
type ValidateRuleTemplate struct {
	// +kubebuilder:validation:Enum=condition
	// +optional
	Type string `json:"type,omitempty"`
	// +optional
	Condition *ValidateCondition `json:"condition,omitempty"`
}

// ValidateCondition compares the data (dataRef) with a value or a
// referenced value; a hit rejects (affectMode reject, the default) or is
// the only thing admitted (allow).
type ValidateCondition struct {
	// +kubebuilder:validation:Enum=reject;allow
	// +optional
	AffectMode string `json:"affectMode,omitempty"`
	// +kubebuilder:validation:Enum=Equal;NotEqual;Exist;NotExist;In;NotIn;Gt;Gte;Lt;Lte;Regex
	// +optional
	Cond string `json:"cond,omitempty"`
	// +optional
	DataRef *ResourceRefer `json:"dataRef,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	Value *ConstantValue `json:"value,omitempty"`
	// +optional
	ValueRef *ResourceRefer `json:"valueRef,omitempty"`
	// +optional
	ValueProcess *ValueProcess `json:"valueProcess,omitempty"`
}

// ValueProcess is arithmetic on the value before comparing.
type ValueProcess struct {
	// +kubebuilder:validation:Enum="+";"-";"*";"/"
	// +optional
	Operation string `json:"operation,omitempty"`
	// An integer, a decimal or a percentage.
	// +optional
	OperationWith *intstr.IntOrString `json:"operationWith,omitempty"`
}

// PolicyStatus is written by modwright's operator (kinitiras' policies
// have none): Ready, or False with the compile error.
type PolicyStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
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

// OverridePolicy patches the objects of its own namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=op,categories=modwright
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              OverridePolicySpec `json:"spec,omitempty"`
	// +optional
	Status PolicyStatus `json:"status,omitempty"`
}

// OverridePolicyList is a list of OverridePolicies.
//
// +kubebuilder:object:root=true
type OverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OverridePolicy `json:"items"`
}

// ClusterOverridePolicy patches objects of every namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cop,categories=modwright
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterOverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              OverridePolicySpec `json:"spec,omitempty"`
	// +optional
	Status PolicyStatus `json:"status,omitempty"`
}

// ClusterOverridePolicyList is a list of ClusterOverridePolicies.
//
// +kubebuilder:object:root=true
type ClusterOverridePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterOverridePolicy `json:"items"`
}

// ClusterValidatePolicy may refuse objects of every namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cvp,categories=modwright
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterValidatePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ClusterValidatePolicySpec `json:"spec,omitempty"`
	// +optional
	Status PolicyStatus `json:"status,omitempty"`
}

// ClusterValidatePolicyList is a list of ClusterValidatePolicies.
//
// +kubebuilder:object:root=true
type ClusterValidatePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterValidatePolicy `json:"items"`
}
