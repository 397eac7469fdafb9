package v2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kyvernov1 "github.com/modwright/modwright/api/kyverno/v1"
)

// KindGlobalContextEntry is Kyverno's GlobalContextEntry: data kept by the
// operator for policies to read (a ClusterPolicy's globalReference context
// entries, CEL's globalContext.Get).
const KindGlobalContextEntry = "GlobalContextEntry"

// GlobalContextEntry keeps the objects of one resource, or the answer of
// an API or service call refreshed at an interval, and named projections
// of them.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=gctxentry,categories=kyverno;modwright
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="REFRESH INTERVAL",type="string",JSONPath=".spec.apiCall.refreshInterval"
// +kubebuilder:printcolumn:name="LAST REFRESH",type="date",JSONPath=".status.lastRefreshTime"
type GlobalContextEntry struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              GlobalContextEntrySpec `json:"spec"`
	// +optional
	Status GlobalContextEntryStatus `json:"status,omitempty"`
}

// GlobalContextEntrySpec is one of kubernetesResource and apiCall, and
// the projections of its data.
type GlobalContextEntrySpec struct {
	// KubernetesResource: the objects of a resource (in one namespace, or
	// all), kept up to date by a watch.
	// +optional
	KubernetesResource *KubernetesResource `json:"kubernetesResource,omitempty"`
	// APICall: the answer of an API server or service call, made again
	// every refreshInterval.
	// +optional
	APICall *ExternalAPICall `json:"apiCall,omitempty"`
	// Projections are named JMESPath expressions over the data; policies
	// read one as entry.projection.
	// +optional
	Projections []GlobalContextEntryProjection `json:"projections,omitempty"`
}

// KubernetesResource names a resource: its group ("" for the core
// group), version, plural name and namespace ("" for all namespaces, or a
// cluster-scoped resource).
type KubernetesResource struct {
	// +optional
	Group    string `json:"group,omitempty"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ExternalAPICall is a context apiCall made every refreshInterval
// (default 10m), retried retryLimit times (default 3) when it fails.
type ExternalAPICall struct {
	kyvernov1.ContextAPICall `json:",inline"`
	// +optional
	RefreshInterval *metav1.Duration `json:"refreshInterval,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=1
	RetryLimit int `json:"retryLimit,omitempty"`
}

// GlobalContextEntryProjection is a name and the JMESPath that gives its
// value from the entry's data.
type GlobalContextEntryProjection struct {
	Name     string `json:"name"`
	JMESPath string `json:"jmesPath"`
}

// GlobalContextEntryStatus says whether the data is there (condition
// Ready) and when an apiCall last succeeded.
type GlobalContextEntryStatus struct {
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	LastRefreshTime metav1.Time `json:"lastRefreshTime,omitempty"`
}

// GlobalContextEntryList is a list of GlobalContextEntries.
//
// +kubebuilder:object:root=true
type GlobalContextEntryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GlobalContextEntry `json:"items"`
}
