package v1

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Gatekeeper's mutators (mutations.gatekeeper.sh/v1, also read as v1beta1
// and v1alpha1).
const (
	MutationsGroup     = "mutations.gatekeeper.sh"
	KindAssign         = "Assign"
	KindAssignMetadata = "AssignMetadata"
	KindModifySet      = "ModifySet"
	KindAssignImage    = "AssignImage"
)

// MutationVersions are the apiVersions a mutator is read in (the same
// schema).
var MutationVersions = []string{"v1", "v1beta1", "v1alpha1"}

// Mutator is any of the four mutators: their fields in one type (each
// kind's own are checked by the adapter).
type Mutator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              MutatorSpec    `json:"spec"`
	Status            map[string]any `json:"status,omitempty"`
}

// MutatorSpec is a mutator's spec.
type MutatorSpec struct {
	ApplyTo    []ApplyTo         `json:"applyTo,omitempty"`
	Match      Match             `json:"match,omitempty"`
	Location   string            `json:"location"`
	Parameters MutatorParameters `json:"parameters,omitempty"`
}

// ApplyTo names the groups, kinds and versions a mutator applies to.
type ApplyTo struct {
	Groups   []string `json:"groups,omitempty"`
	Kinds    []string `json:"kinds,omitempty"`
	Versions []string `json:"versions,omitempty"`
}

// MutatorParameters are the parameters of every mutator kind.
type MutatorParameters struct {
	// Assign, AssignMetadata.
	PathTests []PathTest      `json:"pathTests,omitempty"`
	AssignIf  json.RawMessage `json:"assignIf,omitempty"`
	Assign    *AssignField    `json:"assign,omitempty"`
	// ModifySet.
	Operation string           `json:"operation,omitempty"`
	Values    *ModifySetValues `json:"values,omitempty"`
	// AssignImage.
	AssignDomain string `json:"assignDomain,omitempty"`
	AssignPath   string `json:"assignPath,omitempty"`
	AssignTag    string `json:"assignTag,omitempty"`
}

// PathTest is a condition on a sub-path of the location.
type PathTest struct {
	SubPath   string `json:"subPath"`
	Condition string `json:"condition"`
}

// AssignField is what is assigned: a value, or a field of the object's
// metadata.
type AssignField struct {
	Value        json.RawMessage `json:"value,omitempty"`
	FromMetadata *FromMetadata   `json:"fromMetadata,omitempty"`
	ExternalData json.RawMessage `json:"externalData,omitempty"`
}

// FromMetadata names a metadata field (namespace or name).
type FromMetadata struct {
	Field string `json:"field"`
}

// ModifySetValues are the values a ModifySet merges or prunes.
type ModifySetValues struct {
	FromList []json.RawMessage `json:"fromList,omitempty"`
}
