// Package kinitiras is the adapter of kinitiras' policy kinds
// (policy.kcloudlabs.io/v1alpha1: OverridePolicy, ClusterOverridePolicy,
// ClusterValidatePolicy), which kinitiras' users bring unchanged:
//
//   - selector.go: resourceSelectors select exactly as kinitiras'
//     ResourceMatchSelectors decides (kinitiras' 20 selector cases pass);
//   - template.go, interrupt.go: templates rendered to CUE (RenderOverride,
//     RenderValidate), the CUE kinitiras' policy webhook stores as
//     renderedCue; Render and Check are that webhook's work (the rendered
//     programs are compared with kinitiras' own on probe objects);
//   - direct.go: annotations, labels and condition templates run directly in Go,
//     tested equal to their rendered CUE (see "Two codes" below);
//   - refs.go: valueRef and dataRef sources (k8s, owner, http) resolved into
//     data.extraParams through the engine's KindReader and HTTPReader;
//   - policy.go: Compile (every program compiled once), ApplyOverrides
//     (kinitiras' order: cluster policies, then the object's namespace's,
//     by name; renderedCue, cue, plaintext; json-patch v4 semantics) and
//     Validate (the first valid: false rejects with its reason);
//   - kind.go, explain.go: the engine's adapters (override policies mutate,
//     never on DELETE; validate policies deny with 403) and explain.
//
// Two codes for one meaning, on purpose: a template's meaning is its
// rendered CUE. That text cannot go: it is what kinitiras' policy webhook
// stores in renderedCue, what users read and what policies that carry only
// renderedCue run, so template.go renders it exactly. direct.go is a
// measured hot path over a subset (annotations, labels, conditions): 17 us
// against about 60 us for the same CUE per review (BENCHMARKS.md, issue
// 17). It takes its reference paths from the rendered CUE (refPath parses
// refExpr's output), and TestNativeMetadata and TestNativeCondition compare
// the two on 61,000 combinations of type, operation, cond, value kind,
// valueProcess and reference, so a change to one that the other does not
// follow fails. A template outside that subset runs its rendered CUE.
//
// Where modwright differs from kinitiras on purpose, docs/compatibility.md
// says why. Package kinitiras must not know HTTP, the CLI, informers or
// other kinds.
package kinitiras
