// Package kinitiras is the adapter of kinitiras' policy kinds
// (policy.kcloudlabs.io/v1alpha1: OverridePolicy, ClusterOverridePolicy,
// ClusterValidatePolicy), issue 17. This first part owns their resource
// selectors (selector.go): which objects a policy's resourceSelectors
// select, exactly as kinitiras' ResourceMatchSelectors decides (kinitiras'
// 20 selector cases pass). The kinds themselves (decoding, overriders,
// validate rules, templates rendered to CUE, order, the applied-overrides
// annotations) come next; CUE programs run through internal/lang/cue.
//
// Package kinitiras must not know HTTP, the CLI, informers or other kinds.
package kinitiras
