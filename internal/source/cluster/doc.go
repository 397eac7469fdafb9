// Package cluster is the in-cluster source: it keeps the serving rule
// snapshot in step with the rules of every kind of its registry stored in
// the Kubernetes API (one informer of unstructured objects per kind, through
// a controller-runtime cache; compiled by the kind once per generation;
// published with an atomic swap), and it serves syntheticRefs (Namespaces,
// Nodes) from the same caches, never with a live API call per request.
//
// A kind whose rules compile against definitions stored in the cluster
// (kinds.Stored: Gatekeeper's ConstraintTemplates) has its definitions
// watched and compiled as one set, its rules compiled again when they
// change, and each rule kind they define watched once its CRD is
// installed (definitions.go). Inventory is the engine's InventoryReader:
// the kinds the configuration objects of kinds.Syncing kinds name.
//
// It also serves Policies' context: ConfigMaps (ConfigMaps: an informer per
// ConfigMap read, field-selected on its name, stopped when idle), apiCall
// reads (APIClient: timeout, size limit, a TTL cache per distinct read,
// concurrent identical reads shared) and the requester's RBAC roles (Roles:
// RoleBindings and ClusterRoleBindings indexed by subject in the manager's
// cache), the authorizer (Authorizer: SubjectAccessReviews, cached).
//
// Globals keeps Kyverno's GlobalContextEntries (the objects of a resource,
// or the answer of a call made again at an interval, and their JMESPath
// projections), bounded, for the kinds' global context reads; it reads
// their specs as unstructured data.
//
// GraphSource keeps the relationship graph (internal/graph) from dynamic
// informers of the core kinds the extractors read, objects slimmed on
// ingest, and of the custom resources rule packs name, started and stopped
// as their CRDs come and go (a deleted CRD's edges are kept); it is the
// engine's GraphReader in the cluster.
//
// It owns watching and compiling; what a rule means is the kinds' and
// internal/engine's business: it holds no kind's Go types. It must not know about HTTP, admission reviews
// or the CLI.
package cluster
