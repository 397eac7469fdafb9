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
// "null"); nested variables resolve inside out (the inner value spliced
// into the outer expression's text as it is); `\{{` and `\$(` escape (the
// backslash is dropped); `{{- x }}` is Kyverno's shallow form, and here
// every variable is shallow: a substituted value is never scanned for
// variables again (Kyverno scans a deep value's `{{ }}`: a documented
// deviation, docs/compatibility.md); `{{@}}` is the
// current value: the value at the field's path in "target", else in
// "request.object", past a "foreach" and two more elements (Document);
// Template.Render takes it from its caller. References are resolved at
// CompileDocument: `$(path)` reads a scalar leaf of the document (anchors
// such as "(key)" removed from its path), relative to the referencing field.
//
// Kyverno scans with regular expressions and rewrites the string pass by
// pass; this package parses once. Every Kyverno conformance case gives the
// same result. The known differences, in inputs no case or policy relies on:
//   - "}}" inside a variable's JSON literal closes the variable here; Kyverno
//     accepts one level of single braces in a variable and leaves a variable
//     with deeper braces as text.
//   - "{{{{x}}}}" is "{{" x "}}" text here; Kyverno's next pass resolves the
//     "{{...}}" the first pass left.
//   - "{{a}}{{b}}" with a == "" is the text of b here; Kyverno's second pass
//     sees the string as one variable and keeps b's JSON type.
//   - a shallow variable whose value is not a string renders as JSON here;
//     Kyverno panics.
//   - `$( )` references in map keys are not resolved (variables are).
//   - the DELETE rule (request.object reads request.oldObject) and which
//     keys are undefined are the Resolver's: a Resolver returns an error
//     wrapping ErrUndefined for a key the context does not have.
//
// Package subst must not know JMESPath (the Resolver evaluates expression
// text), rule kinds, Kubernetes types or admission requests.
package subst
