// Package source reads rules from where they live and publishes them as
// engine.Snapshots. It reads manifests (YAML or JSON, several documents per
// file, `kind: List`) from files, directories and standard input
// (ReadPaths; a Document is a kinds.Manifest; documents split where
// kubectl's reader splits them, without copying: split.go; YAML as
// sigs.k8s.io/yaml reads it, which documents in the plain block subset most
// manifests are written in skip: blockyaml.go), compiles every document of a
// kind the registry serves through that kind (LoadRules), keeps the serving
// snapshot (Store) and reloads files (FileSource). The cluster source
// (informers) lives in internal/source/cluster.
//
// It knows no rule kind (the kinds.Registry it is given does), and must not
// evaluate rules or know about HTTP.
package source
