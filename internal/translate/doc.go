// Package translate translates rules into Kubernetes' own admission policies
// where CEL can express them exactly: a ModRule or a ModwrightPolicy becomes a
// MutatingAdmissionPolicy and/or a ValidatingAdmissionPolicy with its
// binding, which the API server runs in-process; so do Gatekeeper's
// templates and constraints and Kyverno's ValidatingPolicies (kyverno.go). A rule it cannot translate
// is listed with the reason (Sprig functions, syntheticRefs, context
// entries, other languages...), never translated approximately. Place
// (placement.go) keeps in the webhook the rules that run faster there:
// those whose requests it is called for anyway.
//
// It owns the translation: the rule kinds' API types in, admissionregistration
// objects out. It must not know the engine, the webhook or the CLI; whether
// a translation is exact is tested against the engine by the CLI's corpus
// (compiled_test.go) and the end-to-end suite.
package translate
