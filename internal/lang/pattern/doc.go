// Package pattern is Kyverno's validation patterns: an overlay of the
// object (maps, lists, scalars) whose keys may carry anchors (conditional
// "(k)", equality "=(k)", negation "X(k)", existence "^(k)", global
// "<(k)") and whose string values may carry wildcards ("*", "?"),
// operators (">", "<", ">=", "<=", "!"), ranges ("1-10", "1!-10"),
// alternatives ("a | b"), conjunctions ("a & b"), quantities and durations.
//
// Compile turns a pattern into an immutable tree once (anchors parsed,
// string patterns split, their operands parsed); Pattern.Match checks an
// object against it with Kyverno's semantics: the order in which keys are
// checked (anchors first, sorted; then keys holding anchors), what makes
// a rule not apply (a conditional or global anchor that does not hold:
// Skip) rather than fail, and the path of the first failure
// ("/spec/containers/0/image/", as Kyverno prints it). Where Kyverno's
// result depends on Go's map order (a wildcard label key matching two
// labels), the first match in sorted order is taken.
//
// MatchString is the string-pattern half alone (Kyverno's condition
// operators use it too: internal/lang/conditions).
//
// It knows no Kubernetes, no rule kind and no variables: a kind
// substitutes {{ }} variables before compiling a pattern that holds them.
package pattern
