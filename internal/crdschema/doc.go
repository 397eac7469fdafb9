// Package crdschema checks custom resources offline as the kube-apiserver
// of our Kubernetes version (k8s.io/apiextensions-apiserver at the go.mod
// version) checks them: a CustomResourceDefinition is validated as the
// API server validates it on creation (its schemas structural, its
// x-kubernetes-validations rules compiled within their cost limits), and an
// object of its kind is defaulted, pruned (unknown fields reported) and
// validated by the API server's own custom resource strategy: type and
// object metadata, the version's OpenAPI schema, list types, embedded
// resources, and every x-kubernetes-validations rule (CEL, with self bound
// at the rule's location, property-name escaping, list-type semantics,
// transition rules with oldSelf on UPDATE and ratcheting, messageExpression,
// reason, fieldPath, cost limits). It uses apiextensions-apiserver's
// schema, defaulting, pruning, validation and CEL packages; it implements
// none of those semantics itself. Typing (Self, SelfType) gives a value at a
// place in a custom resource as a CRD rule placed there sees self: what a
// ModwrightPolicy's scoped validation binds (Set and the operator's CRD cache are
// the engine's SchemaReader).
//
// It knows no rule kind, no admission request and no command line.
package crdschema
