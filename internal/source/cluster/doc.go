// Package cluster is the in-cluster source: it keeps the serving rule
// snapshot in step with the rules of every kind of a kinds.Registry stored
// in the Kubernetes API (one informer of unstructured objects per kind,
// compiled through the kind once per uid and generation, published with an
// atomic swap), and it serves syntheticRefs (Namespaces, Nodes) from the
// same caches, never with a live API call per request.
//
// It owns watching and compiling; what a rule means is its kind adapter's
// business (internal/kinds/...), and it holds no kind's Go types. It must not know about HTTP, admission reviews
// or the CLI.
package cluster
