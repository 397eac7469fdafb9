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
//     tested equal to their rendered CUE;
//   - refs.go: valueRef and dataRef sources (k8s, owner, http) resolved into
//     data.extraParams through the engine's KindReader and HTTPReader;
//   - policy.go: Compile (every program compiled once), ApplyOverrides
//     (kinitiras' order: cluster policies, then the object's namespace's,
//     by name; renderedCue, cue, plaintext; json-patch v4 semantics) and
//     Validate (the first valid: false rejects with its reason);
//   - kind.go, explain.go: the engine's adapters (override policies mutate,
//     never on DELETE; validate policies deny with 403) and explain.
//
// Where modwright differs from kinitiras on purpose, docs/compatibility.md
// says why. Package kinitiras must not know HTTP, the CLI, informers or
// other kinds.
package kinitiras
