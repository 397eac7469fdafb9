// Package v2 holds Kyverno's PolicyException (kyverno.io/v2, also read as
// kyverno.io/v2beta1), its field names unchanged. What an exception means
// is in internal/kinds/kyverno. It knows no engine.
//
// +kubebuilder:object:generate=true
// +groupName=kyverno.io
package v2
