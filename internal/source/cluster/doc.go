// Package cluster is the in-cluster source: it keeps the serving rule
// snapshot in step with the ModRules stored in the Kubernetes API (through a
// controller-runtime informer cache, compiled once per generation, published
// with an atomic swap), and it serves syntheticRefs (Namespaces, Nodes) from
// the same caches, never with a live API call per request.
//
// It owns watching and compiling; what a rule means is internal/rules' and
// internal/engine's business. It must not know about HTTP, admission reviews
// or the CLI.
package cluster
