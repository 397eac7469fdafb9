// Package graphapi is the relationship graph's read endpoint, served on
// the operator's metrics port (never on the webhook's): KubeAtlas' read API
// (GET /api/v1alpha1/resources/{namespace}/{kind}/{name}, with /incoming
// and /outgoing; `_` is the namespace of cluster-scoped objects), in its
// JSON shapes, over a graph.Graph.
//
// It owns the HTTP shapes only: what the graph holds and how it is kept
// are internal/graph's and internal/source/cluster's business. It knows no
// rule, no admission and no informer.
package graphapi
