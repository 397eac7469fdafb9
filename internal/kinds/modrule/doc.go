// Package modrule is the adapter of KubeMod's ModRule
// (api.kubemod.io/v1beta1): the first rule kind behind the kernel's seam.
//
// It owns everything ModRule means: strict decoding of its manifests
// (Decode, KindAdapter implements kinds.Kind), compiling a rule once
// (Compiler: every select through the JSONPath language and every patch
// value and rejectMessage through the Go template language of the language
// seam, internal/lang; regexes, paths with #N placeholders; positioned
// rules.FieldErrors), its index keys (namespace, cluster-rules namespace
// and targetNamespaceRegex, admissionOperations, the kinds its $.kind
// criteria pin), its order (executionTier) and phase (Patch: mutate,
// Reject: validate), its evaluation through an engine.Handle (match: the
// criteria with KubeMod's semantics, a select shared by rules of one Cache
// evaluated once per version of the object, selected.go; apply: building
// every operation, then
// Handle.Patch atomically, or Handle.Reject with the rendered message),
// its trace (Trace, in engine.RuleTrace.Detail), its explanation
// (kinds.Explainer) and its lint checks (kinds.Linter).
//
// It must not know HTTP, admission reviews, informers or the command line;
// it reaches JSONPath and templates only through internal/lang.
package modrule
