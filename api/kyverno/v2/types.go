package v2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
)

// KindPolicyException is Kyverno's PolicyException (kyverno.io/v2, also
// read as v2beta1).
const KindPolicyException = "PolicyException"

// PolicyException exempts the objects it matches from rules of policies.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=polex,categories=kyverno;modwright
// +kubebuilder:storageversion
type PolicyException struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PolicyExceptionSpec `json:"spec"`
}

// PolicyExceptionSpec is a PolicyException's spec.
type PolicyExceptionSpec struct {
	Background  *bool                           `json:"background,omitempty"`
	Match       kyvernov1.MatchResources        `json:"match"`
	Conditions  *kyvernov1.AnyAllConditions     `json:"conditions,omitempty"`
	Exceptions  []Exception                     `json:"exceptions"`
	PodSecurity []kyvernov1.PodSecurityStandard `json:"podSecurity,omitempty"`
}

// Exception names a policy (namespace/name for a Policy) and its rules
// (wildcards allowed).
type Exception struct {
	PolicyName string   `json:"policyName"`
	RuleNames  []string `json:"ruleNames"`
}

// PolicyExceptionList is a list of PolicyExceptions.
//
// +kubebuilder:object:root=true
type PolicyExceptionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PolicyException `json:"items"`
}
