// Package rules turns ModRules into compiled rules and publishes them as an
// immutable, indexed Snapshot.
//
// Compiling parses every select expression, regex, path and template once,
// and reports every problem of a rule at once, each with the rule
// (namespace/name), the field path (spec.match[2].select) and, where there is
// one, the position inside the expression. A rule that does not compile is
// kept in the snapshot with its error attached: never dropped silently, never
// evaluated.
//
// A Snapshot indexes rules by scope (namespace, cluster rules, global rules),
// admission operation and kind, wherever a criterion pins $.kind to literal
// values, so that finding the rules that can apply to a request costs a few
// map lookups whatever the number of rules.
//
// The package must not know about HTTP, admission reviews, informers or how a
// decision is made: evaluation is internal/engine's.
package rules
