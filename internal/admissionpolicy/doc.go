// Package admissionpolicy evaluates Kubernetes' own Validating and
// MutatingAdmissionPolicies and their bindings (admissionregistration.k8s.io/v1)
// offline, as the kube-apiserver of our Kubernetes version (k8s.io/apiserver
// at the go.mod version) evaluates them: each policy is checked as the API
// server checks it on create (every expression compiled and type-checked);
// its policy compiler, matcher (match constraints, namespace and object
// selectors), params (paramKind and paramRef over given objects), match
// conditions, variables, validations, message expressions, audit
// annotations, validation actions, mutations (JSONPatch, ApplyConfiguration
// with the built-in types' schemas), reinvocation and failure policy all come
// from k8s.io/apiserver's admission policy packages, driven without
// informers: the policies, bindings, params and namespaces are given. A
// built-in kind is evaluated in its Go form, as the API server holds it.
//
// It knows no rule kind of ours, no webhook and no command line.
package admissionpolicy
