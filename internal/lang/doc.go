// Package lang is what every expression language shares: the Env a
// program is compiled against (the variables it may read, the limits of
// an evaluation), the positioned Diagnostics of a compilation, the
// Activation an evaluation reads (the values of the declared variables),
// the Program every compiled program is, the shapes two languages add to
// it (Query: JSONPath selections; Text: templates), Lazy objects (members
// computed on first read, a ModwrightPolicy's variables) and the errors every
// language wraps (ErrLimit, ErrNoReader).
//
// There is no Language interface and no registry of languages: a kind
// calls the language packages it supports directly (lang/jsonpath,
// lang/gotemplate, lang/cel, lang/jmespath, lang/cue, lang/rego,
// lang/conditions, lang/subst), because what it compiles differs by
// language (a CEL program is type-checked against the kind's declarations
// and a result type, a JMESPath one lists the roots it reads, a CUE one
// runs in workers, a Rego one is a module and an entrypoint) and a
// common Compile(src) would hide exactly that. What the languages share
// is here; each language's compile entry points are its own.
//
// Package lang knows no rule kind, no Kubernetes type, no admission
// review: rule kinds (internal/kinds/...) compile their fields through the
// language packages and turn Diagnostics into rules.FieldErrors.
package lang
