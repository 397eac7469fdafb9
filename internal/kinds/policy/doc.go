// Package policy is the adapter of modwright's own rule kinds,
// ModwrightPolicy and ClusterModwrightPolicy (modwright.io/v1alpha1, package
// api/v1alpha1; also read under their former names Policy and
// ClusterPolicy, with a deprecation: kinds.Renamed): it decodes
// their manifests strictly and compiles them into engine.Rules, with their
// index keys (namespace, operations, kinds), their static match (resource
// filters, label selectors, exclusions), and every expression slot compiled
// once through the language seam (CEL: internal/lang/cel; Kyverno's
// JMESPath: internal/lang/jmespath; CUE: internal/lang/cue; Rego:
// internal/lang/rego, rego.go; scopes in KubeMod JSONPath), with
// Kyverno's {{ }} templates (internal/lang/subst), condition blocks
// (internal/lang/conditions), static patches and context entries
// (configMap, apiCall, variable) compiled at load too.
//
// Kyverno's context (kyverno.go) is the one document JMESPath programs and
// {{ }} variables read: request (with object and oldObject, the roles),
// serviceAccountName/Namespace, images (internal/kinds/images), and every
// context entry and variable by name. It is built member by member, only
// the members a program reads (jmespath.Program.Roots), once per run; the
// object in the library's form and Kyverno's request are shared by every
// policy of an evaluation. ConfigMaps, API reads and roles come through
// engine.Handle (Objects, API, Roles). A scoped CEL validation's self and
// oldSelf are typed by the CRD's schema at the scope's place when the
// engine's SchemaReader knows the object's kind (Handle.Schemas; lint
// --crd type-checks them: LintSchemas), as the API server types a CRD
// rule's self.
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
