// Package kinitiras is the adapter of kinitiras' policy kinds
// (policy.kcloudlabs.io/v1alpha1: OverridePolicy, ClusterOverridePolicy,
// ClusterValidatePolicy), issue 17, in progress. It owns so far:
//
//   - their resource selectors (selector.go): which objects a policy's
//     resourceSelectors select, exactly as kinitiras' ResourceMatchSelectors
//     decides (kinitiras' 20 selector cases pass);
//
//   - their semantics over stored manifests (policy.go): Compile (every CUE
//     program once, positioned errors), ApplyOverrides (cluster policies,
//     then the object's namespace's, rules sorted by policy name; within a
//     rule renderedCue with a template, then cue, then plaintext; patches
//     with json-patch v4, as kinitiras) and Validate (the first valid: false
//     rejects with its reason; oldObject on UPDATE only); kinitiras' override
//     and validate cases pass. Deviations fixed: an OverridePolicy applies to
//     its own namespace only; targetOperations ["*"] means every operation
//     (kinitiras matched none).
//
//   - the kinds' adapters (kind.go): engine.Rules in the kernel's order
//     (tier, kind, namespace, name: ClusterOverridePolicies before
//     OverridePolicies, each by name), served from files by the CLI and
//     serve --standalone.
//
// Not yet: the operator's watch (the Go API types and CRDs do not ship),
// templates rendered to CUE, origin overriders, valueRef/dataRef sources,
// the applied-overrides annotations, kinitiras' webhook paths. CUE programs
// run through internal/lang/cue.
//
// Package kinitiras must not know HTTP, the CLI, informers or other kinds.
package kinitiras
