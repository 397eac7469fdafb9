// Package policy is the adapter of modwright's own rule kinds, Policy and
// ClusterPolicy (modwright.io/v1alpha1, package api/v1alpha1): it decodes
// their manifests strictly and compiles them into engine.Rules, with their
// index keys (namespace, operations, kinds), their static match (resource
// filters, label selectors, exclusions), and every expression slot compiled
// once through the language seam (CEL today: internal/lang/cel; scopes in
// KubeMod JSONPath).
//
// Evaluation follows the kube-apiserver's admission policies: variables are
// lazy and evaluated at most once per phase, matchConditions gate the rule,
// validations deny, warn or audit, mutations (JSONPatch, apply
// configurations) apply atomically, audit annotations are added, and an
// evaluation error obeys failurePolicy. The runtime cost of one phase of
// one policy is bounded by the apiserver's budget.
//
// It must not know HTTP, the CLI or how rules are sourced; other kinds and
// the kernel's internals are none of its business (it sees the engine
// through engine.Handle).
package policy
