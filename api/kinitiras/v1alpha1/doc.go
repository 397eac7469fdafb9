// Package v1alpha1 holds kinitiras' policy API (policy.kcloudlabs.io/v1alpha1:
// OverridePolicy, ClusterOverridePolicy, ClusterValidatePolicy), its field
// names, enums and defaults unchanged, so that a kinitiras user's policies
// load as they are. modwright adds a status (the operator's Ready
// condition) and nothing else.
//
// It owns the Go types and their CRD markers; what the policies mean is in
// internal/kinds/kinitiras. It knows no engine.
//
// +kubebuilder:object:generate=true
// +groupName=policy.kcloudlabs.io
package v1alpha1
