// Package nativepolicy evaluates Kubernetes' own ValidatingAdmissionPolicies
// and their bindings (admissionregistration.k8s.io/v1) offline, as the
// kube-apiserver of our Kubernetes version (k8s.io/apiserver at the go.mod
// version) evaluates them: its policy compiler, matcher (match
// constraints, namespace and object selectors), params (paramKind and
// paramRef over given objects), match conditions, variables, validations,
// message expressions, audit annotations, validation actions and failure
// policy all come from k8s.io/apiserver's admission policy packages, driven
// without informers: the policies, bindings, params and namespaces are given.
//
// It knows no rule kind of ours, no webhook and no command line.
package nativepolicy
