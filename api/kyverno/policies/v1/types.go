package v1

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group and versions of Kyverno's CEL policies.
const (
	Group          = "policies.kyverno.io"
	Version        = "v1"
	VersionV1beta1 = "v1beta1"
	// VersionV1alpha1 is the first version (Kyverno 1.14).
	VersionV1alpha1 = "v1alpha1"

	KindValidatingPolicy           = "ValidatingPolicy"
	KindNamespacedValidatingPolicy = "NamespacedValidatingPolicy"
)

// ValidatingPolicy validates objects with CEL, as a
// ValidatingAdmissionPolicy with its binding (validationActions) in one.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=vpol,categories=kyverno;modwright
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ValidatingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ValidatingPolicySpec `json:"spec"`
	// Status is written by the operator (the Ready condition) or by
	// Kyverno; modwright never evaluates it.
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// ValidatingPolicyList is a list of ValidatingPolicies.
//
// +kubebuilder:object:root=true
type ValidatingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ValidatingPolicy `json:"items"`
}

// NamespacedValidatingPolicy is a ValidatingPolicy for the objects of its
// namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=nvpol,categories=kyverno;modwright
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NamespacedValidatingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ValidatingPolicySpec `json:"spec"`
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// NamespacedValidatingPolicyList is a list of NamespacedValidatingPolicies.
//
// +kubebuilder:object:root=true
type NamespacedValidatingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespacedValidatingPolicy `json:"items"`
}

// ValidatingPolicySpec is a ValidatingPolicy's spec.
type ValidatingPolicySpec struct {
	MatchConstraints     *admissionregistrationv1.MatchResources    `json:"matchConstraints,omitempty"`
	Validations          []admissionregistrationv1.Validation       `json:"validations,omitempty"`
	FailurePolicy        *admissionregistrationv1.FailurePolicyType `json:"failurePolicy,omitempty"`
	AuditAnnotations     []admissionregistrationv1.AuditAnnotation  `json:"auditAnnotations,omitempty"`
	MatchConditions      []admissionregistrationv1.MatchCondition   `json:"matchConditions,omitempty"`
	Variables            []admissionregistrationv1.Variable         `json:"variables,omitempty"`
	Autogen              *AutogenConfiguration                      `json:"autogen,omitempty"`
	ValidationActions    []admissionregistrationv1.ValidationAction `json:"validationActions,omitempty"`
	WebhookConfiguration *WebhookConfiguration                      `json:"webhookConfiguration,omitempty"`
	Evaluation           *EvaluationConfiguration                   `json:"evaluation,omitempty"`
}

// AutogenConfiguration says what Kyverno generates from the policy.
type AutogenConfiguration struct {
	PodControllers            *PodControllers `json:"podControllers,omitempty"`
	ValidatingAdmissionPolicy *Enabled        `json:"validatingAdmissionPolicy,omitempty"`
}

// PodControllers are the pod controllers a Pod policy is generated for.
type PodControllers struct {
	Controllers []string `json:"controllers,omitempty"`
}

// WebhookConfiguration is the webhook's timeout.
type WebhookConfiguration struct {
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}

// EvaluationConfiguration says where the policy runs: at admission, in
// background scans; its mode (Kubernetes, or JSON for plain documents).
type EvaluationConfiguration struct {
	Mode       string   `json:"mode,omitempty"`
	Admission  *Enabled `json:"admission,omitempty"`
	Background *Enabled `json:"background,omitempty"`
}

// Enabled switches a part on or off.
type Enabled struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// Kinds of Kyverno's mutating CEL policies.
const (
	KindMutatingPolicy           = "MutatingPolicy"
	KindNamespacedMutatingPolicy = "NamespacedMutatingPolicy"
)

// MutatingPolicy mutates objects with CEL, as a MutatingAdmissionPolicy
// with its binding in one; with mutateExisting, existing objects too.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=mpol,categories=kyverno;modwright
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MutatingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MutatingPolicySpec `json:"spec"`
	// Status is written by the operator (the Ready condition) or by
	// Kyverno; modwright never evaluates it.
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// MutatingPolicyList is a list of MutatingPolicies.
//
// +kubebuilder:object:root=true
type MutatingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MutatingPolicy `json:"items"`
}

// NamespacedMutatingPolicy is a MutatingPolicy for the objects of its
// namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=nmpol,categories=kyverno;modwright
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NamespacedMutatingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MutatingPolicySpec `json:"spec"`
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// NamespacedMutatingPolicyList is a list of NamespacedMutatingPolicies.
//
// +kubebuilder:object:root=true
type NamespacedMutatingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespacedMutatingPolicy `json:"items"`
}

// MutatingPolicySpec is a MutatingPolicy's spec.
type MutatingPolicySpec struct {
	MatchConstraints       *admissionregistrationv1.MatchResources        `json:"matchConstraints,omitempty"`
	FailurePolicy          *admissionregistrationv1.FailurePolicyType     `json:"failurePolicy,omitempty"`
	MatchConditions        []admissionregistrationv1.MatchCondition       `json:"matchConditions,omitempty"`
	Variables              []admissionregistrationv1.Variable             `json:"variables,omitempty"`
	Autogen                *MutatingAutogenConfiguration                  `json:"autogen,omitempty"`
	TargetMatchConstraints *TargetMatchConstraints                        `json:"targetMatchConstraints,omitempty"`
	TargetMatchConditions  []admissionregistrationv1.MatchCondition       `json:"targetMatchConditions,omitempty"`
	Mutations              []admissionregistrationv1.Mutation             `json:"mutations,omitempty"`
	AuditAnnotations       []admissionregistrationv1.AuditAnnotation      `json:"auditAnnotations,omitempty"`
	WebhookConfiguration   *WebhookConfiguration                          `json:"webhookConfiguration,omitempty"`
	Evaluation             *MutatingEvaluationConfiguration               `json:"evaluation,omitempty"`
	ReinvocationPolicy     admissionregistrationv1.ReinvocationPolicyType `json:"reinvocationPolicy,omitempty"`
}

// MutatingAutogenConfiguration says what Kyverno generates from a
// MutatingPolicy.
type MutatingAutogenConfiguration struct {
	PodControllers          *PodControllers `json:"podControllers,omitempty"`
	MutatingAdmissionPolicy *Enabled        `json:"mutatingAdmissionPolicy,omitempty"`
}

// TargetMatchConstraints select the existing objects mutateExisting
// mutates.
type TargetMatchConstraints struct {
	Expression                             string `json:"expression,omitempty"`
	admissionregistrationv1.MatchResources `json:",inline"`
}

// MutatingEvaluationConfiguration says where a MutatingPolicy runs.
type MutatingEvaluationConfiguration struct {
	EvaluationConfiguration `json:",inline"`
	MutateExisting          *Enabled `json:"mutateExisting,omitempty"`
	SkipBackgroundRequests  *bool    `json:"skipBackgroundRequests,omitempty"`
	UseServerSideApply      bool     `json:"useServerSideApply,omitempty"`
}

// Kinds of Kyverno's generating CEL policies.
const (
	KindGeneratingPolicy           = "GeneratingPolicy"
	KindNamespacedGeneratingPolicy = "NamespacedGeneratingPolicy"
)

// GeneratingPolicy generates objects with CEL when the objects it matches
// are admitted: its generate expressions hand them to generator.Apply.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=gpol,categories=kyverno;modwright
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type GeneratingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GeneratingPolicySpec `json:"spec"`
	// Status is written by the operator (the Ready condition) or by
	// Kyverno; modwright never evaluates it.
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// GeneratingPolicyList is a list of GeneratingPolicies.
//
// +kubebuilder:object:root=true
type GeneratingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GeneratingPolicy `json:"items"`
}

// NamespacedGeneratingPolicy is a GeneratingPolicy for the objects of its
// namespace, generating in that namespace only.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=ngpol,categories=kyverno;modwright
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NamespacedGeneratingPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GeneratingPolicySpec `json:"spec"`
	// +kubebuilder:pruning:PreserveUnknownFields
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// NamespacedGeneratingPolicyList is a list of NamespacedGeneratingPolicies.
//
// +kubebuilder:object:root=true
type NamespacedGeneratingPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NamespacedGeneratingPolicy `json:"items"`
}

// GeneratingPolicySpec is a GeneratingPolicy's spec.
type GeneratingPolicySpec struct {
	MatchConstraints     *admissionregistrationv1.MatchResources   `json:"matchConstraints,omitempty"`
	MatchConditions      []admissionregistrationv1.MatchCondition  `json:"matchConditions,omitempty"`
	Variables            []admissionregistrationv1.Variable        `json:"variables,omitempty"`
	Evaluation           *GeneratingEvaluationConfiguration        `json:"evaluation,omitempty"`
	WebhookConfiguration *WebhookConfiguration                     `json:"webhookConfiguration,omitempty"`
	Generation           []Generation                              `json:"generate"`
	AuditAnnotations     []admissionregistrationv1.AuditAnnotation `json:"auditAnnotations,omitempty"`
	UseServerSideApply   bool                                      `json:"useServerSideApply,omitempty"`
}

// GeneratingEvaluationConfiguration says when a GeneratingPolicy runs and
// what becomes of its objects.
type GeneratingEvaluationConfiguration struct {
	Admission                      *Enabled `json:"admission,omitempty"`
	GenerateExisting               *Enabled `json:"generateExisting,omitempty"`
	Synchronize                    *Enabled `json:"synchronize,omitempty"`
	OrphanDownstreamOnPolicyDelete *Enabled `json:"orphanDownstreamOnPolicyDelete,omitempty"`
	SkipBackgroundRequests         *bool    `json:"skipBackgroundRequests,omitempty"`
}

// Generation is one generate entry: a CEL expression calling
// generator.Apply, or a YAML template.
type Generation struct {
	Expression string              `json:"expression,omitempty"`
	Template   *GenerationTemplate `json:"template,omitempty"`
}

// GenerationTemplate is YAML defining the objects to generate, with CEL
// placeholders (( ... )) when Interpolate is cel.
type GenerationTemplate struct {
	Value       string `json:"value"`
	Interpolate string `json:"interpolate,omitempty"`
}

// KindPolicyException is the kind of Kyverno's CEL policies' exceptions.
const KindPolicyException = "PolicyException"

// PolicyException exempts objects from Kyverno's CEL policies: those its
// match conditions hold for, from the policies it names (in full), or
// with the images and values it allows (read by the policies'
// expressions as exceptions.allowedImages and exceptions.allowedValues).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=polex,categories=kyverno;modwright
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PolicyException struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PolicyExceptionSpec `json:"spec"`
}

// PolicyExceptionList is a list of PolicyExceptions.
//
// +kubebuilder:object:root=true
type PolicyExceptionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PolicyException `json:"items"`
}

// PolicyExceptionSpec is a PolicyException's spec, as Kyverno's.
type PolicyExceptionSpec struct {
	PolicyRefs      []PolicyRef                              `json:"policyRefs"`
	MatchConditions []admissionregistrationv1.MatchCondition `json:"matchConditions,omitempty"`
	// +listType=atomic
	Validations   []admissionregistrationv1.Validation `json:"validations,omitempty"`
	Images        []string                             `json:"images,omitempty"`
	AllowedValues []string                             `json:"allowedValues,omitempty"`
	// +kubebuilder:validation:Enum=skip;pass
	ReportResult   string            `json:"reportResult,omitempty"`
	ExpiresAt      *metav1.Time      `json:"expiresAt,omitempty"`
	Properties     map[string]string `json:"properties,omitempty"`
	EvaluationMode string            `json:"evaluationMode,omitempty"`
}

// PolicyRef names a policy by name and kind.
type PolicyRef struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}
