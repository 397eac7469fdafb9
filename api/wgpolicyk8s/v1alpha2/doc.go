// Package v1alpha2 holds the Kubernetes Policy working group's reports
// (wgpolicyk8s.io/v1alpha2 PolicyReport and ClusterPolicyReport), the
// shape Kyverno, Policy Reporter and Kubewarden read, for the CRDs the
// chart installs where no other tool installed them. What goes into a
// report is in internal/audit. It knows no engine.
//
// +kubebuilder:object:generate=true
// +groupName=wgpolicyk8s.io
package v1alpha2
