// Package v1beta1 holds the ModRule API, group api.kubemod.io, version
// v1beta1: KubeMod's schema unchanged, so that existing ModRules load as they
// are, plus a status block for the operator.
//
// It owns the Go types, their defaults, structural validation (enums, ranges,
// which fields go with which rule type) and deep copies. It must not know how
// rules are compiled or evaluated: expression, regex and template checks
// live in internal/rules, which reports them with the same field paths.
//
// +kubebuilder:object:generate=true
// +groupName=api.kubemod.io
package v1beta1
