// Package kinds is the seam between the front ends and the rule kinds: a
// Manifest (one rule document as read), the Kind interface every kind
// adapter implements (which manifests it owns, and compiling one into an
// engine.Rule), the Registry of the kinds served, and the hooks a kind
// contributes beyond compiling (hooks.go: its own metrics as an Observer,
// its own webhook paths; explain.go, lint.go: Explainer, Linter; Admitter).
// Sources, status, metrics, the webhook and the operator go through the
// Registry, so that they hold no kind of their own.
//
// Each kind lives in a subpackage (internal/kinds/modrule for KubeMod's
// ModRule): its API types' decoding, its compiler (expressions through the
// language packages under internal/lang), its engine.Rule (index keys,
// order, phase, scope, the engine.Inputs it reads, evaluation through an
// engine.Handle), its explainer and its lint checks.
//
// The package knows no kind, no language, no HTTP, no informer.
package kinds
