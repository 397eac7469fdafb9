// Package auditor is the operator's background scan: the rules of the
// serving snapshot checked against the objects already in the cluster,
// their results written as reports.
//
// An Auditor runs on the elected leader only (one writer of reports, and
// one load on the API server; a scan is bounded by its client's rate
// limit, so sharding it across replicas would not make it cheaper for the
// API server). It scans when the first snapshot is published, when the
// snapshot changes (a rule added, changed or removed), and every interval;
// a scan lists the objects of the kinds the rules can match, page by page
// through a rate-limited client, evaluates each page's objects with
// audit.Scanner and lets them go, and aggregates the results in a capped
// audit.Report. A scan is idempotent: after a restart the next one starts
// over. The reports go to a Store: wgpolicyk8s.io PolicyReports and a
// ClusterPolicyReport, written only when they change and deleted when
// their namespace has no results any more (CRDStore), or kept in memory
// and served over HTTP, out of etcd (MemoryStore).
//
// It must not know rule kinds, languages or the command line (internal/cli
// wires it).
package auditor
