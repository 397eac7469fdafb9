// Package v1alpha1 holds modwright's own rule API, group modwright.io,
// version v1alpha1: Policy (namespaced: objects of its namespace) and
// ClusterPolicy (cluster-wide).
//
// Every expression slot (variables, match conditions, validations,
// mutations) is a union with one member per language; this version has the
// `cel` member (and `jsonPatch` / `applyConfiguration` for mutations), and a
// new language adds a member beside it: the CRD's rules ("exactly one
// language") list every member, so adding one is additive.
//
// It owns the Go types, their defaults, structural validation (enums,
// unions, which fields go together, as CEL x-kubernetes-validations) and
// deep copies. It must not know how policies are compiled or evaluated:
// expression checks live in internal/kinds/policy, which reports them with
// the same field paths.
//
// +kubebuilder:object:generate=true
// +groupName=modwright.io
package v1alpha1
