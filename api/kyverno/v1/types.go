package v1

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group, versions and kinds of Kyverno's policy API.
const (
	Group              = "kyverno.io"
	GroupV2            = "kyverno.io/v2"
	Version            = "v1"
	VersionV2beta1     = "v2beta1"
	KindClusterPolicy  = "ClusterPolicy"
	KindPolicy         = "Policy"
	AnnotationAutogen  = "pod-policies.kyverno.io/autogen-controllers"
	AnnotationScored   = "policies.kyverno.io/scored"
	AnnotationSeverity = "policies.kyverno.io/severity"
	AnnotationCategory = "policies.kyverno.io/category"
)

// ClusterPolicy is Kyverno's cluster-wide policy.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cpol,categories=kyverno;modwright
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec `json:"spec"`
	// Status is written by the operator (the Ready condition) or by
	// Kyverno; modwright never evaluates it.
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// ClusterPolicyList is a list of ClusterPolicies.
//
// +kubebuilder:object:root=true
type ClusterPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPolicy `json:"items"`
}

// Policy is Kyverno's namespaced policy: its rules apply to objects of
// its namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=pol,categories=kyverno;modwright
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Policy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              Spec `json:"spec"`
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// PolicyList is a list of Policies.
//
// +kubebuilder:object:root=true
type PolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Policy `json:"items"`
}

// Spec is a policy's spec.
type Spec struct {
	Rules                            []Rule                            `json:"rules,omitempty"`
	ApplyRules                       string                            `json:"applyRules,omitempty"`
	FailurePolicy                    string                            `json:"failurePolicy,omitempty"`
	ValidationFailureAction          string                            `json:"validationFailureAction,omitempty"`
	ValidationFailureActionOverrides []ValidationFailureActionOverride `json:"validationFailureActionOverrides,omitempty"`
	EmitWarning                      *bool                             `json:"emitWarning,omitempty"`
	Admission                        *bool                             `json:"admission,omitempty"`
	Background                       *bool                             `json:"background,omitempty"`
	SchemaValidation                 *bool                             `json:"schemaValidation,omitempty"`
	WebhookTimeoutSeconds            *int32                            `json:"webhookTimeoutSeconds,omitempty"`
	MutateExistingOnPolicyUpdate     bool                              `json:"mutateExistingOnPolicyUpdate,omitempty"`
	GenerateExistingOnPolicyUpdate   *bool                             `json:"generateExistingOnPolicyUpdate,omitempty"`
	GenerateExisting                 bool                              `json:"generateExisting,omitempty"`
	UseServerSideApply               bool                              `json:"useServerSideApply,omitempty"`
	WebhookConfiguration             *WebhookConfiguration             `json:"webhookConfiguration,omitempty"`
}

// ValidationFailureActionOverride sets the failure action for namespaces.
type ValidationFailureActionOverride struct {
	Action            string                `json:"action,omitempty"`
	Namespaces        []string              `json:"namespaces,omitempty"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// WebhookConfiguration is the policy's webhook settings.
type WebhookConfiguration struct {
	FailurePolicy   string                                   `json:"failurePolicy,omitempty"`
	TimeoutSeconds  *int32                                   `json:"timeoutSeconds,omitempty"`
	MatchConditions []admissionregistrationv1.MatchCondition `json:"matchConditions,omitempty"`
}

// Rule is one rule of a policy.
type Rule struct {
	Name             string                                   `json:"name"`
	Context          []ContextEntry                           `json:"context,omitempty"`
	ReportProperties map[string]string                        `json:"reportProperties,omitempty"`
	MatchResources   MatchResources                           `json:"match"`
	ExcludeResources *MatchResources                          `json:"exclude,omitempty"`
	ImageExtractors  *apiextensionsv1.JSON                    `json:"imageExtractors,omitempty"`
	Preconditions    *apiextensionsv1.JSON                    `json:"preconditions,omitempty"`
	CELPreconditions []admissionregistrationv1.MatchCondition `json:"celPreconditions,omitempty"`
	Mutation         *apiextensionsv1.JSON                    `json:"mutate,omitempty"`
	Validation       *Validation                              `json:"validate,omitempty"`
	Generation       *apiextensionsv1.JSON                    `json:"generate,omitempty"`
	VerifyImages     []apiextensionsv1.JSON                   `json:"verifyImages,omitempty"`
	// SkipBackgroundRequests is read and has no effect offline.
	SkipBackgroundRequests *bool `json:"skipBackgroundRequests,omitempty"`
}

// MatchResources selects objects: any of Any, all of All, or the older
// single filter (Resources and the user fields).
type MatchResources struct {
	Any                 []ResourceFilter `json:"any,omitempty"`
	All                 []ResourceFilter `json:"all,omitempty"`
	UserInfo            `json:",inline"`
	ResourceDescription `json:"resources,omitempty"`
}

// ResourceFilter is one filter of any or all.
type ResourceFilter struct {
	UserInfo            `json:",inline"`
	ResourceDescription `json:"resources,omitempty"`
}

// UserInfo selects requests by who makes them.
type UserInfo struct {
	Roles        []string         `json:"roles,omitempty"`
	ClusterRoles []string         `json:"clusterRoles,omitempty"`
	Subjects     []rbacv1.Subject `json:"subjects,omitempty"`
}

// ResourceDescription selects objects.
type ResourceDescription struct {
	Kinds             []string              `json:"kinds,omitempty"`
	Name              string                `json:"name,omitempty"`
	Names             []string              `json:"names,omitempty"`
	Namespaces        []string              `json:"namespaces,omitempty"`
	Annotations       map[string]string     `json:"annotations,omitempty"`
	Selector          *metav1.LabelSelector `json:"selector,omitempty"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	Operations        []string              `json:"operations,omitempty"`
}

// ContextEntry adds a named value to the rule's context.
type ContextEntry struct {
	Name            string                `json:"name"`
	ConfigMap       *ConfigMapReference   `json:"configMap,omitempty"`
	APICall         *ContextAPICall       `json:"apiCall,omitempty"`
	ImageRegistry   *apiextensionsv1.JSON `json:"imageRegistry,omitempty"`
	Variable        *Variable             `json:"variable,omitempty"`
	GlobalReference *apiextensionsv1.JSON `json:"globalReference,omitempty"`
}

// Variable is a context variable: a value (with {{ }} variables), or a
// JMESPath expression, with a default.
type Variable struct {
	Value    *apiextensionsv1.JSON `json:"value,omitempty"`
	JMESPath string                `json:"jmesPath,omitempty"`
	Default  *apiextensionsv1.JSON `json:"default,omitempty"`
}

// ConfigMapReference names a ConfigMap.
type ConfigMapReference struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// ContextAPICall is an API server or service call.
type ContextAPICall struct {
	URLPath  string                `json:"urlPath,omitempty"`
	Method   string                `json:"method,omitempty"`
	Data     []RequestData         `json:"data,omitempty"`
	Service  *ServiceCall          `json:"service,omitempty"`
	Default  *apiextensionsv1.JSON `json:"default,omitempty"`
	JMESPath string                `json:"jmesPath,omitempty"`
}

// ServiceCall is a call to a JSON web service (an apiCall's service).
type ServiceCall struct {
	// URL is the service's URL, with variables.
	URL string `json:"url"`
	// Headers are added to the request, their values with variables.
	Headers []HTTPHeader `json:"headers,omitempty"`
	// CABundle is the PEM CA bundle that verifies the server's certificate
	// (the system's roots when empty).
	// +optional
	CABundle string `json:"caBundle,omitempty"`
}

// HTTPHeader is one header of a service call.
type HTTPHeader struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// RequestData is a key and value of a POST call's body.
type RequestData struct {
	Key   string                `json:"key"`
	Value *apiextensionsv1.JSON `json:"value"`
}

// Condition is one condition of preconditions or deny.
type Condition struct {
	Key      *apiextensionsv1.JSON `json:"key,omitempty"`
	Operator string                `json:"operator,omitempty"`
	Value    *apiextensionsv1.JSON `json:"value,omitempty"`
	Message  string                `json:"message,omitempty"`
}

// AnyAllConditions is a condition block.
type AnyAllConditions struct {
	Any []Condition `json:"any,omitempty"`
	All []Condition `json:"all,omitempty"`
}

// Validation is a rule's validate.
type Validation struct {
	FailureAction           string                            `json:"failureAction,omitempty"`
	FailureActionOverrides  []ValidationFailureActionOverride `json:"failureActionOverrides,omitempty"`
	AllowExistingViolations *bool                             `json:"allowExistingViolations,omitempty"`
	Message                 string                            `json:"message,omitempty"`
	Manifests               *apiextensionsv1.JSON             `json:"manifests,omitempty"`
	ForEach                 []ForEachValidation               `json:"foreach,omitempty"`
	Pattern                 *apiextensionsv1.JSON             `json:"pattern,omitempty"`
	AnyPattern              *apiextensionsv1.JSON             `json:"anyPattern,omitempty"`
	Deny                    *Deny                             `json:"deny,omitempty"`
	PodSecurity             *PodSecurity                      `json:"podSecurity,omitempty"`
	CEL                     *CEL                              `json:"cel,omitempty"`
	Assert                  *apiextensionsv1.JSON             `json:"assert,omitempty"`
}

// Deny denies when its conditions hold (a list: all of them; or any/all).
type Deny struct {
	Conditions *apiextensionsv1.JSON `json:"conditions,omitempty"`
}

// ForEachValidation validates each element of a list.
type ForEachValidation struct {
	List          string                `json:"list,omitempty"`
	ElementScope  *bool                 `json:"elementScope,omitempty"`
	Context       []ContextEntry        `json:"context,omitempty"`
	Preconditions *AnyAllConditions     `json:"preconditions,omitempty"`
	Pattern       *apiextensionsv1.JSON `json:"pattern,omitempty"`
	AnyPattern    *apiextensionsv1.JSON `json:"anyPattern,omitempty"`
	Deny          *Deny                 `json:"deny,omitempty"`
	// ForEach is a nested list of ForEachValidation (raw: a schema cannot
	// nest itself; decoded strictly when the policy compiles).
	ForEach *apiextensionsv1.JSON `json:"foreach,omitempty"`
}

// Mutation is a rule's mutate, decoded from Rule.Mutation when the policy
// compiles (the rule keeps it raw, as Kyverno's schema leaves it open).
type Mutation struct {
	MutateExistingOnPolicyUpdate *bool `json:"mutateExistingOnPolicyUpdate,omitempty"`
	// Targets are the existing objects to mutate (mutate existing): the
	// patch applies to each, not to the object admitted.
	Targets             []TargetResourceSpec  `json:"targets,omitempty"`
	PatchStrategicMerge *apiextensionsv1.JSON `json:"patchStrategicMerge,omitempty"`
	// PatchesJSON6902 is a YAML (or JSON) list of RFC 6902 operations.
	PatchesJSON6902 string            `json:"patchesJson6902,omitempty"`
	ForEach         []ForEachMutation `json:"foreach,omitempty"`
}

// TargetResourceSpec picks existing objects a mutate changes: by
// apiVersion and kind, namespace and name (wildcards allowed), a label
// selector; with context entries and preconditions of their own, read
// with the target as the variable target.
type TargetResourceSpec struct {
	APIVersion    string                `json:"apiVersion,omitempty"`
	Kind          string                `json:"kind,omitempty"`
	Namespace     string                `json:"namespace,omitempty"`
	Name          string                `json:"name,omitempty"`
	UID           string                `json:"uid,omitempty"`
	Selector      *metav1.LabelSelector `json:"selector,omitempty"`
	Context       []ContextEntry        `json:"context,omitempty"`
	Preconditions *apiextensionsv1.JSON `json:"preconditions,omitempty"`
}

// ForEachMutation mutates the object once per element of a list.
type ForEachMutation struct {
	List string `json:"list,omitempty"`
	// Order is Ascending or Descending (the default for
	// patchStrategicMerge).
	Order               *string               `json:"order,omitempty"`
	Context             []ContextEntry        `json:"context,omitempty"`
	Preconditions       *AnyAllConditions     `json:"preconditions,omitempty"`
	PatchStrategicMerge *apiextensionsv1.JSON `json:"patchStrategicMerge,omitempty"`
	PatchesJSON6902     string                `json:"patchesJson6902,omitempty"`
	// ForEach is a nested list of ForEachMutation (raw, as
	// ForEachValidation.ForEach).
	ForEach *apiextensionsv1.JSON `json:"foreach,omitempty"`
}

// Generation is a rule's generate, decoded from Rule.Generation when the
// policy compiles (the rule keeps it raw, as Kyverno's schema leaves it
// open).
type Generation struct {
	GenerateExisting               *bool `json:"generateExisting,omitempty"`
	Synchronize                    bool  `json:"synchronize,omitempty"`
	OrphanDownstreamOnPolicyDelete bool  `json:"orphanDownstreamOnPolicyDelete,omitempty"`
	GeneratePattern                `json:",inline"`
	ForEach                        []ForEachGeneration `json:"foreach,omitempty"`
}

// GeneratePattern is the object a generate creates: where (apiVersion,
// kind, namespace, name) and from what (data, clone or cloneList).
type GeneratePattern struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
	// Data is the object's content (variables substituted).
	Data      *apiextensionsv1.JSON `json:"data,omitempty"`
	Clone     CloneFrom             `json:"clone,omitempty"`
	CloneList CloneList             `json:"cloneList,omitempty"`
}

// CloneFrom names the object a generate copies.
type CloneFrom struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
}

// CloneList picks the objects a generate copies: of these kinds
// ("v1/ConfigMap"), in this namespace, with these labels.
type CloneList struct {
	Namespace string                `json:"namespace,omitempty"`
	Kinds     []string              `json:"kinds,omitempty"`
	Selector  *metav1.LabelSelector `json:"selector,omitempty"`
}

// ForEachGeneration generates once per element of a list.
type ForEachGeneration struct {
	List            string            `json:"list,omitempty"`
	Context         []ContextEntry    `json:"context,omitempty"`
	Preconditions   *AnyAllConditions `json:"preconditions,omitempty"`
	GeneratePattern `json:",inline"`
}

// PodSecurity applies a Pod Security Standards level.
type PodSecurity struct {
	Level   string                `json:"level,omitempty"`
	Version string                `json:"version,omitempty"`
	Exclude []PodSecurityStandard `json:"exclude,omitempty"`
}

// PodSecurityStandard exempts a control.
type PodSecurityStandard struct {
	ControlName     string   `json:"controlName"`
	Images          []string `json:"images,omitempty"`
	RestrictedField string   `json:"restrictedField,omitempty"`
	Values          []string `json:"values,omitempty"`
}

// CEL is a validate.cel: the expressions of a ValidatingAdmissionPolicy.
type CEL struct {
	Generate         *bool                                     `json:"generate,omitempty"`
	Expressions      []admissionregistrationv1.Validation      `json:"expressions,omitempty"`
	ParamKind        *admissionregistrationv1.ParamKind        `json:"paramKind,omitempty"`
	ParamRef         *admissionregistrationv1.ParamRef         `json:"paramRef,omitempty"`
	AuditAnnotations []admissionregistrationv1.AuditAnnotation `json:"auditAnnotations,omitempty"`
	Variables        []admissionregistrationv1.Variable        `json:"variables,omitempty"`
}
