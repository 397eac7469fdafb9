// Package conditions owns Kyverno's condition blocks: `{all: [...], any:
// [...]}` of `{key, operator, value, message}`, with Kyverno's operators
// (Equals, NotEquals, In, AnyIn, AllIn, NotIn, AnyNotIn, AllNotIn,
// GreaterThan[OrEquals], LessThan[OrEquals], Duration*), evaluated exactly
// as Kyverno evaluates them (pkg/engine/variables/operator): wildcards
// ("*", "?") in string values, durations, quantities, semantic versions,
// ranges ("1-10", "1!-10") in the Any/All operators, JSON lists in string
// values, and Kyverno's treatment of mismatched types (false, never an
// error). Kyverno's 356 condition cases pass (conformance_test.go).
//
// Compile checks the operators (case-insensitively, with the old spellings
// Equal and NotEqual, as Kyverno) and compiles the {{ }} variables of keys,
// values and messages once; Set.Eval substitutes them through a
// subst.Resolver per request, then applies the operators. Numbers are
// compared as Kyverno sees them after its JSON round trip: float64.
//
// The wildcard matcher (lang.MatchWildcard) is linear in the product of the lengths
// (Kyverno's library backtracks, exponentially on patterns with many
// stars); results are the same.
//
// Package conditions must not know rule kinds, Kubernetes admission, the
// JMESPath library (a Resolver evaluates the {{ }} expressions) or where
// a block sits in a policy.
package conditions
