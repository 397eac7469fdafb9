// Package source reads ModRules from where they live and publishes them as
// rules.Snapshots. This file source reads manifests (YAML or JSON, several
// documents per file, `kind: List`) from files, directories and standard
// input; the cluster source (informers, ModRule status aside) lives in
// internal/source/cluster.
//
// It must not evaluate rules or know about HTTP.
package source
