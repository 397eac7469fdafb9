// Package v1 holds Kyverno's CEL policy API (policies.kyverno.io/v1, also
// read as v1beta1 and v1alpha1, which share its schema): ValidatingPolicy,
// MutatingPolicy, GeneratingPolicy and their Namespaced variants, their
// field names unchanged, so that a
// Kyverno user's policies decode as they are and a misspelled field is an
// error. The admission parts are Kubernetes' own admissionregistration/v1
// types, as in Kyverno's API.
//
// It owns the Go types; what the policies mean is in internal/kinds/kyverno.
// It knows no engine.
//
// +kubebuilder:object:generate=true
// +groupName=policies.kyverno.io
package v1
