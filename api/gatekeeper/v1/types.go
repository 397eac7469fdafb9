package v1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Groups, versions and kinds.
const (
	TemplatesGroup    = "templates.gatekeeper.sh"
	ConstraintsGroup  = "constraints.gatekeeper.sh"
	KindTemplate      = "ConstraintTemplate"
	TemplateVersion   = "v1"
	ConstraintVersion = "v1beta1"
	AdmissionTarget   = "admission.k8s.gatekeeper.sh"
	EngineRego        = "Rego"
	EngineCEL         = "K8sNativeValidation"
	EnforcementDeny   = "deny"
	EnforcementDryrun = "dryrun"
	EnforcementWarn   = "warn"
	EnforcementScoped = "scoped"
)

// TemplateVersions are the apiVersions a ConstraintTemplate is read in
// (the same schema); ConstraintVersions a constraint's.
var (
	TemplateVersions   = []string{"v1", "v1beta1", "v1alpha1"}
	ConstraintVersions = []string{"v1beta1", "v1alpha1"}
)

// ConstraintTemplate defines a constraint kind: its parameters' schema and
// the code that finds violations.
type ConstraintTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              TemplateSpec   `json:"spec"`
	Status            map[string]any `json:"status,omitempty"`
}

// TemplateSpec is a template's spec.
type TemplateSpec struct {
	CRD     CRD      `json:"crd"`
	Targets []Target `json:"targets"`
}

// CRD is the constraint kind's CRD as a template gives it.
type CRD struct {
	Spec CRDSpec `json:"spec"`
}

// CRDSpec names the kind and its parameters' schema.
type CRDSpec struct {
	Names      Names       `json:"names"`
	Validation *Validation `json:"validation,omitempty"`
}

// Names are the kind's names.
type Names struct {
	Kind       string   `json:"kind"`
	ShortNames []string `json:"shortNames,omitempty"`
}

// Validation holds the parameters' schema (an OpenAPI v3 schema, kept as
// written); LegacySchema marks a schema that keeps unknown fields.
type Validation struct {
	OpenAPIV3Schema json.RawMessage `json:"openAPIV3Schema,omitempty"`
	LegacySchema    *bool           `json:"legacySchema,omitempty"`
}

// Target is one enforcement target's code: Rego (with libs) or code
// entries per engine.
type Target struct {
	Target     string   `json:"target"`
	Rego       string   `json:"rego,omitempty"`
	Libs       []string `json:"libs,omitempty"`
	Code       []Code   `json:"code,omitempty"`
	Operations []string `json:"operations,omitempty"`
}

// Code is one engine's implementation; Source is the engine's own
// document (RegoSource or CELSource).
type Code struct {
	Engine string          `json:"engine"`
	Source json.RawMessage `json:"source"`
}

// RegoSource is a Rego code entry's source.
type RegoSource struct {
	Rego    string   `json:"rego"`
	Libs    []string `json:"libs,omitempty"`
	Version string   `json:"version,omitempty"`
}

// CELSource is a K8sNativeValidation code entry's source: a
// ValidatingAdmissionPolicy's expressions.
type CELSource struct {
	Validations []CELValidation `json:"validations,omitempty"`
	// MatchCondition is Gatekeeper's name (singular) for a policy's
	// matchConditions.
	MatchCondition []CELNamed `json:"matchCondition,omitempty"`
	Variables      []CELNamed `json:"variables,omitempty"`
	FailurePolicy  *string    `json:"failurePolicy,omitempty"`
	GenerateVAP    *bool      `json:"generateVAP,omitempty"`
}

// CELValidation is one validation of a CEL source.
type CELValidation struct {
	Expression        string `json:"expression"`
	Message           string `json:"message,omitempty"`
	MessageExpression string `json:"messageExpression,omitempty"`
}

// CELNamed is a named expression: a variable or a match condition.
type CELNamed struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// Constraint is an object of a kind a template defines.
type Constraint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ConstraintSpec `json:"spec,omitempty"`
	Status            map[string]any `json:"status,omitempty"`
}

// ConstraintSpec is a constraint's spec.
type ConstraintSpec struct {
	Match                    Match                     `json:"match,omitempty"`
	Parameters               json.RawMessage           `json:"parameters,omitempty"`
	EnforcementAction        string                    `json:"enforcementAction,omitempty"`
	ScopedEnforcementActions []ScopedEnforcementAction `json:"scopedEnforcementActions,omitempty"`
}

// ScopedEnforcementAction is an action at some enforcement points.
type ScopedEnforcementAction struct {
	Action            string             `json:"action"`
	EnforcementPoints []EnforcementPoint `json:"enforcementPoints"`
}

// EnforcementPoint names one ("validation.gatekeeper.sh", "audit.gatekeeper.sh", "gator.gatekeeper.sh", "*").
type EnforcementPoint struct {
	Name string `json:"name"`
}

// Match selects the objects a constraint (or a mutator) applies to.
type Match struct {
	Kinds              []Kinds               `json:"kinds,omitempty"`
	Scope              string                `json:"scope,omitempty"`
	Namespaces         []string              `json:"namespaces,omitempty"`
	ExcludedNamespaces []string              `json:"excludedNamespaces,omitempty"`
	LabelSelector      *metav1.LabelSelector `json:"labelSelector,omitempty"`
	NamespaceSelector  *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	Name               string                `json:"name,omitempty"`
	Source             string                `json:"source,omitempty"`
}

// Kinds is a set of API groups and kinds.
type Kinds struct {
	APIGroups []string `json:"apiGroups,omitempty"`
	Kinds     []string `json:"kinds,omitempty"`
}
