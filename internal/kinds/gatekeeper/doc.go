// Package gatekeeper is the adapter of OPA Gatekeeper's policies, so that a
// Gatekeeper user's ConstraintTemplates and constraints run unchanged.
//
// A ConstraintTemplate (templates.gatekeeper.sh; Go types in
// api/gatekeeper/v1) is a definition, not a rule (kinds.Definer): it is
// compiled once (template.go) into the CustomResourceDefinition Gatekeeper
// would create for its constraint kind (checked as the API server checks
// it, through internal/crdschema) and its Rego (v0 as Gatekeeper reads it,
// or v1; libs; through internal/lang/rego) or its K8sNativeValidation
// code (cel.go: a ValidatingAdmissionPolicy's expressions through
// internal/lang/cel, which run instead of the Rego when a template has
// both, as in Gatekeeper). A constraint
// (constraints.gatekeeper.sh, any kind a template defines:
// kinds.GroupOwner) is the rule: validated against its kind's CRD as the
// API server would (parameters defaulted), its spec.match compiled
// (match.go), evaluated with Gatekeeper's input (input.review,
// input.parameters, data.inventory) and its violations turned into
// denials, warnings or audit results by its enforcementAction (eval.go).
// Its template's Rego is specialized for its parameters when it compiles
// (specialize.go: OPA's partial evaluation, a bounded number of
// constraints per template).
//
// The mutators (mutations.gatekeeper.sh: Assign, AssignMetadata,
// ModifySet, AssignImage; mutate.go) are rules of the mutating phase: a
// location (location.go, Gatekeeper's path syntax, parsed once), applyTo,
// match and pathTests, applied to a copy of the object and patched as the
// difference.
//
// It knows no HTTP, informers, the CLI or other kinds.
package gatekeeper
