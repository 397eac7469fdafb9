package v1alpha2

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Group and Version of the reports.
const (
	Group   = "wgpolicyk8s.io"
	Version = "v1alpha2"
)

// PolicyReport holds the results of policies on the objects of one
// namespace.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=polr
// +kubebuilder:printcolumn:name="Pass",type=integer,JSONPath=`.summary.pass`
// +kubebuilder:printcolumn:name="Fail",type=integer,JSONPath=`.summary.fail`
// +kubebuilder:printcolumn:name="Warn",type=integer,JSONPath=`.summary.warn`
// +kubebuilder:printcolumn:name="Error",type=integer,JSONPath=`.summary.error`
// +kubebuilder:printcolumn:name="Skip",type=integer,JSONPath=`.summary.skip`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PolicyReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Scope is the object the report is about, when it is about one.
	// +optional
	Scope *corev1.ObjectReference `json:"scope,omitempty"`
	// ScopeSelector selects the objects the report is about.
	// +optional
	ScopeSelector *metav1.LabelSelector `json:"scopeSelector,omitempty"`
	// Summary counts the results by status.
	// +optional
	Summary PolicyReportSummary `json:"summary,omitempty"`
	// Results are the policies' results.
	// +optional
	Results []PolicyReportResult `json:"results,omitempty"`
}

// ClusterPolicyReport holds the results of policies on cluster-scoped
// objects.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=cpolr
// +kubebuilder:printcolumn:name="Pass",type=integer,JSONPath=`.summary.pass`
// +kubebuilder:printcolumn:name="Fail",type=integer,JSONPath=`.summary.fail`
// +kubebuilder:printcolumn:name="Warn",type=integer,JSONPath=`.summary.warn`
// +kubebuilder:printcolumn:name="Error",type=integer,JSONPath=`.summary.error`
// +kubebuilder:printcolumn:name="Skip",type=integer,JSONPath=`.summary.skip`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterPolicyReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Scope *corev1.ObjectReference `json:"scope,omitempty"`
	// +optional
	ScopeSelector *metav1.LabelSelector `json:"scopeSelector,omitempty"`
	// +optional
	Summary PolicyReportSummary `json:"summary,omitempty"`
	// +optional
	Results []PolicyReportResult `json:"results,omitempty"`
}

// PolicyReportSummary counts results by status.
type PolicyReportSummary struct {
	// +optional
	Pass int `json:"pass"`
	// +optional
	Fail int `json:"fail"`
	// +optional
	Warn int `json:"warn"`
	// +optional
	Error int `json:"error"`
	// +optional
	Skip int `json:"skip"`
}

// PolicyResult is a result's status.
// +kubebuilder:validation:Enum=pass;fail;warn;error;skip
type PolicyResult string

// PolicyResultSeverity is a result's severity.
// +kubebuilder:validation:Enum=critical;high;low;medium;info
type PolicyResultSeverity string

// PolicyReportResult is one policy's result on objects.
type PolicyReportResult struct {
	// Source is the tool that produced the result.
	// +optional
	Source string `json:"source,omitempty"`
	// Policy is the policy's name.
	Policy string `json:"policy"`
	// Rule is the policy's rule.
	// +optional
	Rule string `json:"rule,omitempty"`
	// Category groups policies.
	// +optional
	Category string `json:"category,omitempty"`
	// Severity is how grave a failure is.
	// +optional
	Severity PolicyResultSeverity `json:"severity,omitempty"`
	// Timestamp is when the result was made.
	// +optional
	Timestamp metav1.Timestamp `json:"timestamp,omitempty"`
	// Result is the status.
	// +optional
	Result PolicyResult `json:"result,omitempty"`
	// Scored is false for informational results.
	// +optional
	Scored bool `json:"scored,omitempty"`
	// Resources are the objects the result is about.
	// +optional
	Resources []corev1.ObjectReference `json:"resources,omitempty"`
	// ResourceSelector selects the objects the result is about.
	// +optional
	ResourceSelector *metav1.LabelSelector `json:"resourceSelector,omitempty"`
	// Message is the result's text.
	// +optional
	Message string `json:"message,omitempty"`
	// Properties are more facts about the result.
	// +optional
	Properties map[string]string `json:"properties,omitempty"`
}

// PolicyReportList is a list of PolicyReports.
//
// +kubebuilder:object:root=true
type PolicyReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PolicyReport `json:"items"`
}

// ClusterPolicyReportList is a list of ClusterPolicyReports.
//
// +kubebuilder:object:root=true
type ClusterPolicyReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterPolicyReport `json:"items"`
}
