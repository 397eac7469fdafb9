package v2beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
	kyvernov2 "github.com/modwright/modwright/api/kyverno/v2"
)

// ClusterPolicy is kyverno.io/v2beta1's ClusterPolicy: v1's.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cpol,categories=kyverno;modwright
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="kyverno.io/v2beta1 ClusterPolicy is deprecated; use kyverno.io/v1 ClusterPolicy"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              kyvernov1.Spec `json:"spec"`
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

// Policy is kyverno.io/v2beta1's Policy: v1's.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=pol,categories=kyverno;modwright
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="kyverno.io/v2beta1 Policy is deprecated; use kyverno.io/v1 Policy"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Policy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              kyvernov1.Spec `json:"spec"`
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

// PolicyException is kyverno.io/v2beta1's PolicyException: v2's.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=polex,categories=kyverno;modwright
// +kubebuilder:deprecatedversion:warning="kyverno.io/v2beta1 PolicyException is deprecated; use kyverno.io/v2 PolicyException"
type PolicyException struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              kyvernov2.PolicyExceptionSpec `json:"spec"`
}

// PolicyExceptionList is a list of PolicyExceptions.
//
// +kubebuilder:object:root=true
type PolicyExceptionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PolicyException `json:"items"`
}
