// Package v1 holds OPA Gatekeeper's policy documents as Gatekeeper's users
// write them, field names unchanged: the ConstraintTemplate
// (templates.gatekeeper.sh/v1, also read as v1beta1 and v1alpha1) and the
// constraints of the kinds templates define (constraints.gatekeeper.sh
// v1beta1, also v1alpha1 and v1). What they mean is in
// internal/kinds/gatekeeper. It knows no engine.
//
// The package is not a source of CRDs (Gatekeeper's own CRDs are
// Gatekeeper's; a constraint kind's is built from its template):
//
// +kubebuilder:skip
package v1
