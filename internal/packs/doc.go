// Package packs loads Rego rule packs written for KubeAtlas' rego_api v1
// contract (a directory with metadata.yaml and .rego modules, or an OCI
// artifact of them pulled with oras-go: LoadOCI, Push), checks their
// rego_api and kubeatlas constraint (KubeAtlasVersion is the contract
// modwright satisfies), compiles each module once, routes resources to
// modules by (group, kind) and decodes their output into edges
// ({type, from, to}), with typed errors for every way a pack fails.
//
// It knows no admission, no rule kind and no informer: resources come in
// as JSON trees, edges go out as values.
package packs
