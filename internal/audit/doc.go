// Package audit evaluates rules of every kind against objects that already
// exist, as a background scan does, and reports the results.
//
// A Scanner evaluates one object at a time (callers stream objects; it
// keeps none): validation only, as a CREATE with no requester and
// engine.Request.Background set, so that no rule's failure stops the
// others. Each rule that applied gives results (Result: pass, fail, warn,
// error, skip): a kind whose trace knows its inner rules says them
// (Kyverno's rules, a ModwrightPolicy's validations); for the others a
// rejection or a warning is a fail, a failure an error, and a rule that
// applied without either a pass. A Report aggregates results per namespace
// into wgpolicyk8s.io/v1alpha2 PolicyReports (ClusterPolicyReport for
// cluster-scoped objects), the shape Policy Reporter and Kyverno's tools
// read: the summary always exact, the results capped (fails first), a
// truncated report saying so in its annotations.
//
// It must not know rule kinds, languages, files, HTTP or how reports are
// stored; its callers (the CLI's audit command, the operator's scan) read
// objects and write reports.
package audit
