// Package v2 holds Kyverno's PolicyException (kyverno.io/v2, also read as
// kyverno.io/v2beta1) and GlobalContextEntry, their field names unchanged.
// What an exception means is in internal/kinds/kyverno; what an entry
// holds, in internal/source/cluster (globals.go). It knows no engine.
//
// +kubebuilder:object:generate=true
// +groupName=kyverno.io
package v2
