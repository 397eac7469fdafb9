// Package v2beta1 serves Kyverno's deprecated kyverno.io/v2beta1 versions
// of ClusterPolicy, Policy and PolicyException in modwright's CRDs (for
// clusters without Kyverno), so that a user's manifests written for
// v2beta1 apply as they are. The types are v1's (v2 for PolicyException):
// v2beta1 is a subset of them, and the API server converts between the
// versions by apiVersion alone (no conversion webhook), as Kyverno's own
// CRDs do. The rule kinds read both versions (internal/kinds/kyverno).
//
// +kubebuilder:object:generate=true
// +groupName=kyverno.io
package v2beta1
