// Package subst owns Kyverno-style substitution in the strings of a rule:
// `{{ expr }}` variables (JMESPath text evaluated by a Resolver) and
// `$(./../key)` references to other fields of the same document.
//
// Every string is parsed once, at load, into an immutable Template
// (Compile); a whole rule document is compiled with CompileDocument, which
// also resolves its `$( )` references then, since they read only the
// document itself. Per request only the variables are evaluated
// (Template.Render, Document.Substitute).
//
// Semantics follow Kyverno's (pkg/engine/variables): a string that is only
// one variable takes the value's JSON type; an embedded variable is rendered
// as text (strings as they are, other values as compact JSON, null as
// "null"); nested variables resolve inside out; `\{{` and `\$(` escape (the
// backslash is dropped); `{{- x }}` is shallow (its value is not scanned for
// variables again, whereas a deep value's `{{ }}` are); `{{@}}` is the
// current value. The differences from Kyverno's regular-expression scanner
// are listed in the conformance test's deviation table.
//
// Package subst must not know JMESPath (the Resolver evaluates expression
// text), rule kinds, Kubernetes types or admission requests.
package subst
