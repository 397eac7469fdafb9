// Package graph owns the relationship graph's vocabulary (Edge, Ref, the
// built-in edge types) and the built-in extractors: Extract derives, from
// one object's JSON tree, the edges the core API defines (ownership, the
// ConfigMaps, Secrets, PersistentVolumeClaims and ServiceAccount a pod spec
// uses, an Ingress's Services, a claim's volume); docs/graph.md states
// each exactly. Graph holds the edges of a set of objects, indexed by
// both ends and kept up to date object by object (the operator's informers
// feed it; the CLI builds it from manifests); Slim is what an informer
// needs to keep of an object for it.
//
// It knows Kubernetes objects' shapes, nothing of admission, rule kinds,
// languages, informers or packs (which derive edges of their own in
// package packs).
package graph
