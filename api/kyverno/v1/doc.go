// Package v1 holds Kyverno's policy API (kyverno.io/v1, also read as
// kyverno.io/v2beta1: ClusterPolicy and Policy), its field names unchanged,
// so that a Kyverno user's policies decode as they are and a misspelled
// field is an error, as the API server with Kyverno's CRDs would say.
//
// It owns the Go types; what the policies mean is in internal/kinds/kyverno.
// A rule's mutate is kept raw, as Kyverno's schema leaves it open, and
// decoded strictly into Mutation when the policy compiles. The parts
// modwright does not evaluate yet (generate, verifyImages,
// validate.manifests) are kept as raw JSON: a policy using them loads and
// is reported, never silently skipped. It knows no engine.
//
// The CRDs generated from these types (deploy/crds/kyverno.io_*.yaml) are
// for clusters without Kyverno: where Kyverno's own CRDs are installed,
// they are reused as they are.
//
// +kubebuilder:object:generate=true
// +groupName=kyverno.io
package v1
