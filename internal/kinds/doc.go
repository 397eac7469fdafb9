// Package kinds is the seam between the front ends and the rule kinds: a
// Manifest (one rule document as read), the Kind interface every kind
// adapter implements (which manifests it owns, and compiling one into an
// engine.Rule), and the Registry of the kinds served. Sources, status,
// metrics and the validating webhook go through the Registry, so that they
// hold no kind of their own.
//
// Each kind lives in a subpackage (internal/kinds/modrule for KubeMod's
// ModRule): its API types' decoding, its compiler (expressions through the
// language seam, internal/lang), its engine.Rule (index keys, order, phase,
// scope, evaluation through an engine.Handle), its explainer and its lint
// checks.
//
// The package knows no kind, no language, no HTTP, no informer.
package kinds
